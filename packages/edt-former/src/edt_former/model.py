"""EDT-Former: the connector (static + dynamic queries, Q-Former, projection) and the frozen LLM.

Stage 2 (``models/mol_llama.py``): the query outputs are projected into the LLM's embedding
space; the first `n_static` outputs replace the ``<mol>`` placeholders of the prompt one to
one, and the local (patch) outputs are inserted right after the last ``<mol>``, with label
-100 at every inserted or replaced position. The LLM is frozen except the embedding rows of
the tokens added to its vocabulary (`unlock_new_token_embeddings`); optionally LoRA (r = 8).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from edt_former.patching import local_tokens
from edt_former.qformer import (
    QFormer,
    QFormerConfig,
    Stage1Heads,
    contrastive_loss,
    hard_negatives,
)

IGNORE = -100
MOL = "<mol>"
NEW_TOKENS = ("<mol>", "<mol_start>", "<mol_end>")
"""Tokens added to the LLM: the placeholder and two delimiters whose embedding rows are learnt."""


@dataclass(frozen=True)
class ConnectorConfig:
    """Which queries the connector builds (official: 32 static, at most 64 local, both patches)."""

    n_static: int = 32
    local_budget: int = 64
    use_brics: bool = True
    use_entropy: bool = True
    qformer: QFormerConfig = field(default_factory=QFormerConfig)

    def __post_init__(self) -> None:
        if not isinstance(self.n_static, int) or self.n_static < 1:
            raise ValueError(
                f"n_static: expected an int >= 1 (the <mol> slots), got {self.n_static!r}"
            )
        if not isinstance(self.local_budget, int) or self.local_budget < 0:
            raise ValueError(f"local_budget: expected an int >= 0, got {self.local_budget!r}")
        if self.local_budget and not (self.use_brics or self.use_entropy):
            raise ValueError(
                f"local_budget: {self.local_budget} local queries but neither use_brics nor "
                "use_entropy is set; set local_budget=0 for static queries only"
            )

    @property
    def dynamic(self) -> bool:
        return self.local_budget > 0


class EDTConnector(nn.Module):
    """Graph node features -> query outputs ``(B, n_static + local_budget, hidden)`` and mask."""

    def __init__(self, config: ConnectorConfig, node_dim: int) -> None:
        super().__init__()
        self.config = config
        h = config.qformer.hidden
        self.ln_graph = nn.LayerNorm(node_dim)
        # BLIP-2 / official init of the static queries: N(0, 0.02)
        self.static = nn.Parameter(torch.randn(1, config.n_static, h) * 0.02)
        self.local_proj = nn.Linear(node_dim, h) if config.dynamic else None
        self.qformer = QFormer(config.qformer, node_dim)

    def queries(
        self, batch: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(queries, query_mask, nodes, node_mask)`` with nodes layer-normed (as pooled)."""
        nodes = self.ln_graph(batch["nodes"])
        node_mask = batch["node_mask"]
        b = nodes.shape[0]
        q = self.static.expand(b, -1, -1)
        qm = torch.ones(q.shape[:2], dtype=torch.bool, device=q.device)
        if self.local_proj is not None:
            brics = batch.get("brics_ids") if self.config.use_brics else None
            ent = batch.get("entropy_ids") if self.config.use_entropy else None
            if (self.config.use_brics and brics is None) or (
                self.config.use_entropy and ent is None
            ):
                raise ValueError(
                    "batch: the connector needs 'brics_ids' and/or 'entropy_ids' it is configured for"
                )
            loc, lm = local_tokens(nodes, brics, ent, self.config.local_budget)
            q = torch.cat([q, self.local_proj(loc)], dim=1)
            qm = torch.cat([qm, lm], dim=1)
        return q, qm, nodes, node_mask

    def forward(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        q, qm, nodes, node_mask = self.queries(batch)
        out = self.qformer(q, qm, nodes, node_mask, mode="query")
        return out, qm


def stage1_loss(
    connector: EDTConnector,
    heads: Stage1Heads,
    batch: dict[str, Any],
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """BLIP-2 stage 1 on (molecule, text) pairs: contrastive + matching + captioning.

    `batch` holds the graph fields and ``text_ids``/``text_mask`` ``(B, T)`` whose first token
    plays CLS (and, for captioning, the decoder's start token).
    """
    qf, c = connector.qformer, connector.config.qformer
    q, qm, nodes, node_mask = connector.queries(batch)
    ids, tmask = batch["text_ids"], batch["text_mask"].bool()
    n_q, bsz = q.shape[1], q.shape[0]
    if bsz < 2:
        raise ValueError("batch: stage 1 needs at least 2 pairs (contrastive negatives)")
    # one causal pass: queries never see text, so their outputs equal a query-only pass
    hidden = qf(q, qm, nodes, node_mask, ids, tmask, mode="causal")
    graph_feats = F.normalize(heads.graph_proj(hidden[:, :n_q]), dim=-1)
    text_cls = qf(None, None, text_ids=ids, text_mask=tmask, mode="text")[:, 0]
    text_feats = F.normalize(heads.text_proj(text_cls), dim=-1)
    loss_gtc, sim = contrastive_loss(graph_feats, qm, text_feats, c.temperature)
    # matching: (pos graph, pos text) = 1; (neg graph, pos text), (pos graph, neg text) = 0
    neg_text, neg_graph = hard_negatives(sim, generator)
    s = connector.config.n_static
    static = connector.static.expand(3 * bsz, -1, -1)
    smask = torch.ones(static.shape[:2], dtype=torch.bool, device=static.device)
    g_idx = torch.cat([torch.arange(bsz), neg_graph.cpu(), torch.arange(bsz)]).to(nodes.device)
    t_idx = torch.cat([torch.arange(bsz), torch.arange(bsz), neg_text.cpu()]).to(ids.device)
    out = qf(static, smask, nodes[g_idx], node_mask[g_idx], ids[t_idx], tmask[t_idx], mode="bi")
    logits = heads.gtm_head(out[:, :s]).mean(1)
    gtm_labels = torch.cat([torch.ones(bsz), torch.zeros(2 * bsz)]).long().to(logits.device)
    loss_gtm = F.cross_entropy(logits, gtm_labels)
    # captioning: next text token from the queries and the text before it
    lm_logits = qf.lm_head(hidden[:, n_q:-1])
    target = ids[:, 1:].masked_fill(~tmask[:, 1:], IGNORE)
    loss_lm = F.cross_entropy(
        lm_logits.reshape(-1, lm_logits.shape[-1]), target.reshape(-1), ignore_index=IGNORE
    )
    loss = loss_gtc + loss_gtm + loss_lm
    return loss, {"gtc": loss_gtc.item(), "gtm": loss_gtm.item(), "lm": loss_lm.item()}


def unlock_new_token_embeddings(
    llm: Any, new_ids: Sequence[int], init: str = "mean"
) -> torch.utils.hooks.RemovableHandle:
    """Make only the rows `new_ids` of the LLM's input embedding trainable.

    The whole table gets ``requires_grad`` with a gradient hook that zeroes every other row,
    and ``_no_weight_decay`` (AdamW's decay would otherwise shrink the frozen rows): with a
    zero gradient from the first step, Adam's moments stay zero and those rows are
    bit-identical after training. (The official ``unlock_new_token_embeddings`` sets
    ``requires_grad`` on ``weight[idx]``, an indexing temporary, so nothing is unlocked.)
    The new rows start at the mean of the old rows (official ``init="mean"``). Returns the
    hook's handle.
    """
    emb = llm.get_input_embeddings()
    w = emb.weight
    n = w.shape[0]
    ids = sorted({int(i) for i in new_ids})
    if not ids:
        raise ValueError("new_ids: expected at least one new token id")
    if ids[0] < 0 or ids[-1] >= n:
        raise ValueError(f"new_ids: expected ids in [0, {n}), got {ids}")
    if init not in ("mean", "zero", "keep"):
        raise ValueError(f"init: expected 'mean', 'zero' or 'keep', got {init!r}")
    rows = torch.zeros(n, 1, dtype=torch.bool, device=w.device)
    rows[ids] = True
    with torch.no_grad():
        if init == "mean":
            w[ids] = w[~rows.squeeze(1)].mean(0)
        elif init == "zero":
            w[ids] = 0.0
    w.requires_grad_(True)
    w._no_weight_decay = True  # type: ignore[attr-defined]
    return w.register_hook(lambda g: torch.where(rows, g, torch.zeros_like(g)))


def freeze_llm(
    llm: Any, tokenizer: Any, new_tokens: Sequence[str] = NEW_TOKENS, lora_r: int = 0
) -> list[int]:
    """Add `new_tokens` to the tokenizer and the LLM, freeze the LLM, unlock the new rows.

    With ``lora_r > 0`` the official downstream setting is added: peft LoRA (alpha 32,
    dropout 0.1) on every attention and MLP projection. Returns the new token ids.
    """
    tokenizer.add_special_tokens({"additional_special_tokens": list(new_tokens)})
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    llm.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    for p in llm.parameters():
        p.requires_grad_(False)
    llm.eval()
    new_ids = [int(tokenizer.convert_tokens_to_ids(t)) for t in new_tokens]
    if lora_r:
        from peft import LoraConfig, get_peft_model

        cfg = LoraConfig(
            r=lora_r, lora_alpha=32, lora_dropout=0.1, task_type="CAUSAL_LM",
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        )  # fmt: skip
        llm = get_peft_model(llm, cfg)
    unlock_new_token_embeddings(llm, new_ids)
    return new_ids


def inject_queries(
    text_embeds: torch.Tensor,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    labels: torch.Tensor,
    queries: torch.Tensor,
    query_mask: torch.Tensor,
    mol_id: int,
    n_static: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Place the query outputs into the prompt embeddings (right-padded rows).

    Args:
        text_embeds: ``(B, T, d)`` token embeddings; input_ids, attention_mask, labels ``(B, T)``.
        queries: ``(B, n_static + L, d)`` projected query outputs; query_mask ``(B, n_static + L)``.
        mol_id: the ``<mol>`` token id; each row must hold exactly `n_static` of them.

    Returns:
        ``(embeds (B, T', d), attention_mask (B, T'), labels (B, T'))``: ``<mol>`` ``j`` holds
        query ``j``; the real local queries follow the last ``<mol>``; labels -100 there.
    """
    rows_e, rows_l = [], []
    for b in range(text_embeds.shape[0]):
        real = attention_mask[b].bool()
        if bool((real[1:] & ~real[:-1]).any()):
            raise ValueError("attention_mask: rows must be right-padded (a 0 before a 1)")
        n = int(real.sum())
        ids, x, lab = input_ids[b, :n], text_embeds[b, :n], labels[b, :n].clone()
        pos = (ids == mol_id).nonzero().flatten()
        if pos.numel() != n_static:
            raise ValueError(
                f"input_ids: row {b} has {pos.numel()} <mol> tokens, expected {n_static} "
                "(one per static query)"
            )
        x = x.clone()
        x[pos] = queries[b, :n_static].to(x.dtype)
        lab[pos] = IGNORE
        loc = queries[b, n_static:][query_mask[b, n_static:]].to(x.dtype)
        cut = int(pos[-1]) + 1
        x = torch.cat([x[:cut], loc, x[cut:]])
        lab = torch.cat([lab[:cut], lab.new_full((loc.shape[0],), IGNORE), lab[cut:]])
        rows_e.append(x)
        rows_l.append(lab)
    width = max(r.shape[0] for r in rows_e)
    d = text_embeds.shape[-1]
    embeds = text_embeds.new_zeros((len(rows_e), width, d))
    mask = attention_mask.new_zeros((len(rows_e), width))
    out_labels = labels.new_full((len(rows_e), width), IGNORE)
    for b, (x, lab) in enumerate(zip(rows_e, rows_l, strict=True)):
        embeds[b, : x.shape[0]] = x
        mask[b, : x.shape[0]] = 1
        out_labels[b, : x.shape[0]] = lab
    return embeds, mask, out_labels


class EDTFormer(nn.Module):
    """Connector + projection + frozen LLM; `forward` returns the LLM's logits and labels.

    With ``connector=None`` the molecule reaches the LLM only through the prompt text (the
    SMILES-in-the-prompt baseline), and no ``<mol>`` may appear.
    """

    def __init__(
        self, connector: EDTConnector | None, llm: Any, mol_id: int, new_ids: Sequence[int] = ()
    ) -> None:
        super().__init__()
        self.connector = connector
        self.llm = llm
        self.mol_id = mol_id
        self.new_ids = tuple(int(i) for i in new_ids)
        d_llm = llm.get_input_embeddings().weight.shape[1]
        self.llm_proj = (
            nn.Linear(connector.config.qformer.hidden, d_llm) if connector is not None else None
        )

    def forward(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        ids, attn, labels = batch["input_ids"], batch["attention_mask"], batch["labels"]
        embeds = self.llm.get_input_embeddings()(ids)
        if self.connector is not None and self.llm_proj is not None:
            out, qm = self.connector(batch)
            q = self.llm_proj(out)
            embeds, attn, labels = inject_queries(
                embeds, ids, attn, labels, q, qm, self.mol_id, self.connector.config.n_static
            )
        logits = self.llm(inputs_embeds=embeds, attention_mask=attn).logits
        return logits, labels

    def trainable_parameters(self) -> int:
        """Parameters that change in training (only the new rows of the embedding table count)."""
        n = 0
        emb = self.llm.get_input_embeddings().weight
        for p in self.parameters():
            if p.requires_grad and p is not emb:
                n += p.numel()
        if emb.requires_grad:
            n += len(self.new_ids) * emb.shape[1]
        return n


def answer_loss(model: EDTFormer, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
    """Cross-entropy of the labelled (answer) tokens, next-token shifted; `fit`'s ``loss_fn``."""
    logits, labels = model(batch)
    logits, labels = logits[:, :-1], labels[:, 1:]
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE
    )
    return loss, {}
