"""Generative perplexity and sample entropy: how text diffusion samples are scored.

MDLM, VADD and their peers score unconditional samples by their **generative perplexity**,
``exp(-1/L sum_i log p_AR(x^i | x^{<i}))`` under a separate autoregressive model (GPT-2 large on
OpenWebText in the papers), beside the **entropy** of the samples' tokens: a sampler can lower
its perplexity by collapsing onto repeated, likely tokens, and the entropy shows that.

With no model hub here the evaluator is `CausalCharLM`, a small causal transformer trained on
the same training split (`evaluator_loss_fn` for `shared_core.train.fit`); its perplexity on
held-out real text is the reference line. It reads a window from a begin-of-sequence token
(id ``vocab_size``), so every one of the L characters is scored, the first by ``p(x^1)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from masked_diffusion.forward import check_tokens


@dataclass(frozen=True)
class CharLMConfig:
    """Size of the evaluator: a pre-norm GPT with learned positions (nanoGPT, shrunk)."""

    vocab_size: int
    seq_len: int
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    mlp_ratio: int = 4

    def __post_init__(self) -> None:
        for name in ("vocab_size", "seq_len", "d_model", "n_heads", "n_layers", "mlp_ratio"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads: must divide d_model={self.d_model}, got {self.n_heads}")


class CausalCharLM(nn.Module):
    """``p(x) = prod_i p(x^i | BOS, x^{<i})`` over windows of `seq_len` tokens.

    ``forward(x)`` (batch, L) -> logits (batch, L, V): row i predicts ``x^i`` from ``x^{<i}``
    (the input is shifted right behind the BOS token internally), so ``forward`` never sees
    the token it scores.
    """

    def __init__(self, cfg: CharLMConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.bos_id = cfg.vocab_size
        self.embed = nn.Embedding(cfg.vocab_size + 1, cfg.d_model)
        self.positions = nn.Parameter(torch.randn(cfg.seq_len, cfg.d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(
            cfg.d_model,
            cfg.n_heads,
            cfg.mlp_ratio * cfg.d_model,
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.blocks = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Next-token logits (batch, L, V) for token windows x (batch, L), L <= seq_len."""
        check_tokens(x, self.cfg.vocab_size, "x")
        n = x.shape[1]
        if n > self.cfg.seq_len:
            raise ValueError(f"x: expected at most {self.cfg.seq_len} tokens per row, got {n}")
        bos = torch.full_like(x[:, :1], self.bos_id)
        inputs = torch.cat([bos, x[:, :-1]], dim=1)
        h = self.embed(inputs) + self.positions[:n]
        causal = nn.Transformer.generate_square_subsequent_mask(n, device=x.device)
        h = self.blocks(h, mask=causal, is_causal=True)
        logits: torch.Tensor = self.head(self.norm(h))
        return logits

    def token_nll(self, x: torch.Tensor) -> torch.Tensor:
        """``-log p(x^i | x^{<i})`` in nats, (batch, L)."""
        logits = self(x)
        logp = F.log_softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)
        return -logp.gather(-1, x.long()[..., None]).squeeze(-1)


def evaluator_loss_fn() -> Callable[[nn.Module, dict[str, Any]], torch.Tensor]:
    """``loss_fn(model, batch)`` for `shared_core.train.fit`: mean next-token NLL (nats/token)
    of ``batch["x0"]`` (the `masked_diffusion.row_batches` format)."""

    def loss_fn(model: nn.Module, batch: dict[str, Any]) -> torch.Tensor:
        x = batch["x0"]
        logits = model(x)
        return F.cross_entropy(logits.flatten(0, 1).float(), x.flatten().long())

    return loss_fn


@torch.no_grad()
def generative_nll(
    evaluator: Callable[[torch.Tensor], torch.Tensor],
    samples: torch.Tensor,
    vocab_size: int,
    batch_size: int = 256,
) -> torch.Tensor:
    """Per-sequence NLL in nats per token, (n,), of `samples` (n, L) under `evaluator`.

    `evaluator(x)` returns next-token logits (batch, L, V) with row i conditioned on x^{<i}
    only (a `CausalCharLM`, or any such callable). Generative perplexity is
    ``exp(result.mean())``.
    """
    check_tokens(samples, vocab_size, "samples")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size: expected a positive int, got {batch_size!r}")
    out = []
    for chunk in samples.split(batch_size):
        logits = evaluator(chunk)
        if tuple(logits.shape) != (*chunk.shape, vocab_size):
            raise ValueError(
                f"evaluator: expected logits of shape {(*chunk.shape, vocab_size)}, "
                f"got {tuple(logits.shape)}"
            )
        logp = F.log_softmax(logits.double(), dim=-1)
        out.append(-logp.gather(-1, chunk.long()[..., None]).squeeze(-1).mean(dim=1))
    return torch.cat(out)


def sequence_entropy(samples: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Entropy in bits of each sequence's own token histogram, (n,).

    MDLM's sample "entropy": a repetitive (mode-collapsed) sample has a low value. The entropy
    of all samples' tokens pooled is `shared_core.metrics.unigram_entropy`.
    """
    check_tokens(samples, vocab_size, "samples")
    counts = F.one_hot(samples.long(), vocab_size).sum(dim=1).double()  # (n, V)
    p = counts / counts.sum(dim=1, keepdim=True)
    plogp = torch.where(p > 0, p * torch.log(p), torch.zeros_like(p))
    return -plogp.sum(dim=1) / math.log(2.0)
