"""A BERT-style Q-Former (BLIP-2) with dynamic queries, and its stage-1 losses.

Every layer: self-attention over ``[queries ; text]``, cross-attention from the queries to the
graph encoder's node features (cross_attention_freq = 1, as in the official configs), then a
feed-forward block; post-LayerNorm as in BERT. Randomly initialised, as the official code
(the ``from_pretrained`` line is commented out there).

Self-attention masks (BLIP-2): ``"bi"`` lets queries and text see each other (matching);
``"causal"`` lets text see every query and the earlier text, queries see only queries (the
captioning / LM loss); ``"query"`` runs the queries alone, ``"text"`` the text alone.

Stage-1 losses (``EDTFormerEncoder.compute_loss``): graph-text contrastive with the
similarity of a pair = the max over queries of ``<query_q, text_CLS>`` (cosine), temperature
0.1; graph-text matching on (pos, pos), (neg graph, pos text), (pos graph, neg text) with
hard negatives drawn from the softmax of the similarities; and the LM (captioning) loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class QFormerConfig:
    """Q-Former size. Official: BERT-base width 768, 12 layers, 32 static queries, embed 512."""

    hidden: int = 64
    layers: int = 2
    heads: int = 4
    ffn: int = 128
    vocab_size: int = 0  # text vocabulary for stage 1 (0: no text side)
    max_text: int = 64
    embed_dim: int = 32  # contrastive projection width
    temperature: float = 0.1
    dropout: float = 0.0


class _Attention(nn.Module):
    def __init__(self, hidden: int, heads: int, kv_dim: int | None = None) -> None:
        super().__init__()
        if hidden % heads:
            raise ValueError(f"heads: {heads} does not divide hidden = {hidden}")
        self.heads = heads
        self.q = nn.Linear(hidden, hidden)
        self.kv = nn.Linear(kv_dim or hidden, 2 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor, ctx: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """x ``(B, L, H)`` attends to ctx ``(B, S, K)`` where ``allowed (B, L, S)`` is True."""
        b, l, h = x.shape
        q = self.q(x).view(b, l, self.heads, -1).transpose(1, 2)
        k, v = self.kv(ctx).view(b, ctx.shape[1], 2, self.heads, -1).permute(2, 0, 3, 1, 4)
        # a row with nothing allowed (a padded query) attends uniformly instead of giving NaN
        allowed = allowed | ~allowed.any(-1, keepdim=True)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed.unsqueeze(1))
        return self.out(o.transpose(1, 2).reshape(b, l, h))


class _Layer(nn.Module):
    def __init__(self, c: QFormerConfig, node_dim: int) -> None:
        super().__init__()
        self.self_attn = _Attention(c.hidden, c.heads)
        self.cross_attn = _Attention(c.hidden, c.heads, node_dim)
        self.ffn = nn.Sequential(nn.Linear(c.hidden, c.ffn), nn.GELU(), nn.Linear(c.ffn, c.hidden))
        self.ln1, self.ln2, self.ln3 = (nn.LayerNorm(c.hidden) for _ in range(3))
        self.drop = nn.Dropout(c.dropout)

    def forward(
        self,
        x: torch.Tensor,
        self_allowed: torch.Tensor,
        n_query: int,
        nodes: torch.Tensor | None,
        cross_allowed: torch.Tensor | None,
    ) -> torch.Tensor:
        x = self.ln1(x + self.drop(self.self_attn(x, x, self_allowed)))
        if n_query and nodes is not None and cross_allowed is not None:
            q = x[:, :n_query]
            q = self.ln2(q + self.drop(self.cross_attn(q, nodes, cross_allowed)))
            x = torch.cat([q, x[:, n_query:]], dim=1)
        return self.ln3(x + self.drop(self.ffn(x)))


class QFormer(nn.Module):
    """Queries (and optionally text) read the node features by cross-attention."""

    def __init__(self, config: QFormerConfig, node_dim: int) -> None:
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(_Layer(config, node_dim) for _ in range(config.layers))
        if config.vocab_size:
            self.word = nn.Embedding(config.vocab_size, config.hidden)
            self.pos = nn.Embedding(config.max_text, config.hidden)
            self.text_ln = nn.LayerNorm(config.hidden)
            self.lm_head = nn.Linear(config.hidden, config.vocab_size)

    def embed_text(self, ids: torch.Tensor) -> torch.Tensor:
        if not self.config.vocab_size:
            raise ValueError("text: this Q-Former has no text side (QFormerConfig.vocab_size = 0)")
        if ids.shape[1] > self.config.max_text:
            raise ValueError(
                f"text: {ids.shape[1]} tokens exceed max_text = {self.config.max_text}"
            )
        pos = torch.arange(ids.shape[1], device=ids.device)
        out: torch.Tensor = self.text_ln(self.word(ids) + self.pos(pos))
        return out

    def forward(
        self,
        queries: torch.Tensor | None,
        query_mask: torch.Tensor | None,
        nodes: torch.Tensor | None = None,
        node_mask: torch.Tensor | None = None,
        text_ids: torch.Tensor | None = None,
        text_mask: torch.Tensor | None = None,
        mode: str = "query",
    ) -> torch.Tensor:
        """Hidden states ``(B, Q + T, hidden)`` of ``[queries ; text]``.

        Shapes: queries ``(B, Q, hidden)``, query_mask ``(B, Q)`` bool, nodes ``(B, N, node_dim)``,
        node_mask ``(B, N)`` bool, text_ids / text_mask ``(B, T)``.
        """
        if mode not in ("query", "text", "bi", "causal"):
            raise ValueError(f"mode: expected 'query', 'text', 'bi' or 'causal', got {mode!r}")
        parts, masks = [], []
        n_query = 0
        if mode != "text":
            if queries is None or query_mask is None:
                raise ValueError(f"queries: mode {mode!r} needs queries and query_mask")
            parts.append(queries)
            masks.append(query_mask)
            n_query = queries.shape[1]
        if mode != "query":
            if text_ids is None or text_mask is None:
                raise ValueError(f"text_ids: mode {mode!r} needs text_ids and text_mask")
            parts.append(self.embed_text(text_ids))
            masks.append(text_mask.bool())
        x = torch.cat(parts, dim=1)
        key = torch.cat(masks, dim=1)  # (B, L) which positions exist
        L = x.shape[1]
        allowed = key[:, None, :].expand(-1, L, -1).clone()
        if mode == "causal":
            t = L - n_query
            causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            allowed[:, n_query:, n_query:] &= causal
            allowed[:, :n_query, n_query:] = False
        cross = None
        if n_query:
            if nodes is None or node_mask is None:
                raise ValueError("nodes: queries need node features and node_mask to attend to")
            cross = node_mask.bool()[:, None, :].expand(-1, n_query, -1)
        for layer in self.layers:
            x = layer(x, allowed, n_query, nodes, cross)
        return x


class Stage1Heads(nn.Module):
    """Projections of BLIP-2 stage 1: graph/text into the contrastive space, and the GTM head."""

    def __init__(self, c: QFormerConfig) -> None:
        super().__init__()
        self.graph_proj = nn.Linear(c.hidden, c.embed_dim)
        self.text_proj = nn.Linear(c.hidden, c.embed_dim)
        self.gtm_head = nn.Linear(c.hidden, 2)


def contrastive_loss(
    graph_feats: torch.Tensor,
    query_mask: torch.Tensor,
    text_feats: torch.Tensor,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Graph-text contrastive loss, similarity = max over (real) queries of the cosine.

    graph_feats ``(B, Q, E)`` and text_feats ``(B, E)``, both L2-normalised. Returns the loss
    and the ``(B, B)`` graph-to-text similarity (already divided by the temperature).
    """
    sim = torch.einsum("bqe,te->btq", graph_feats, text_feats)  # (graph, text, query)
    sim = sim.masked_fill(~query_mask[:, None, :], float("-inf")).amax(-1) / temperature
    labels = torch.arange(sim.shape[0], device=sim.device)
    loss = (F.cross_entropy(sim, labels) + F.cross_entropy(sim.t(), labels)) / 2
    return loss, sim


def hard_negatives(
    sim: torch.Tensor, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """For each graph a negative text, for each text a negative graph, ~ softmax(sim) off-diagonal."""
    with torch.no_grad():
        w_g2t = F.softmax(sim.float(), dim=1) + 1e-4
        w_g2t.fill_diagonal_(0)
        w_t2g = F.softmax(sim.t().float(), dim=1) + 1e-4
        w_t2g.fill_diagonal_(0)
        neg_text = torch.multinomial(w_g2t, 1, generator=generator).squeeze(1)
        neg_graph = torch.multinomial(w_t2g, 1, generator=generator).squeeze(1)
    return neg_text, neg_graph
