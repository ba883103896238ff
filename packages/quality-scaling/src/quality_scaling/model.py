"""A small decoder-only transformer (nanoGPT layout) for the grid of runs."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["GPT", "GPTConfig"]


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int
    seq_len: int = 32
    d_model: int = 32
    n_layer: int = 1
    n_head: int = 2

    def __post_init__(self) -> None:
        for name in ("vocab_size", "seq_len", "d_model", "n_layer", "n_head"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if self.d_model % self.n_head:
            raise ValueError(
                f"d_model: expected a multiple of n_head={self.n_head}, got {self.d_model}"
            )


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, 4 * cfg.d_model),
            nn.GELU(),
            nn.Linear(4 * cfg.d_model, cfg.d_model),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.n_head, d // self.n_head).unbind(2)
        y = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Token + learned position embeddings, `n_layer` pre-LN blocks, tied output head."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.seq_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        # GPT-2 init: N(0, 0.02) weights, zero biases
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def n_params(self, non_embedding: bool = False) -> int:
        n = sum(p.numel() for p in self.parameters())
        return n - (self.tok.weight.numel() + self.pos.weight.numel() if non_embedding else 0)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """``(batch, time)`` token ids -> ``(batch, time, vocab)`` logits."""
        if idx.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
            raise TypeError(f"idx: expected integer token ids, got dtype {idx.dtype}")
        if idx.ndim != 2 or not 1 <= idx.shape[1] <= self.cfg.seq_len or idx.shape[0] == 0:
            raise ValueError(
                f"idx: expected (batch >= 1, 1 <= time <= {self.cfg.seq_len}), got {tuple(idx.shape)}"
            )
        if idx.min() < 0 or idx.max() >= self.cfg.vocab_size:
            raise ValueError(
                f"idx: token ids must lie in [0, vocab_size={self.cfg.vocab_size}), "
                f"got [{int(idx.min())}, {int(idx.max())}]"
            )
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.ln_f(x) @ self.tok.weight.T
