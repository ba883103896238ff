"""A tiny class-conditional VAR: next-scale prediction with a block-causal transformer.

As VAR (Tian et al. 2024, ``models/var.py``): the sequence is the scales' token maps
concatenated coarse to fine, ``L = sum_k pn_k^2``. Scale 1 is one start token (class
embedding + a learned start position); scale k > 1 enters as the upsampled accumulated
feature ``area_down(f_hat_{k-1}, pn_k)`` through a linear word embedding. Every token adds a
learned scale (level) embedding and a fixed 2-D sin-cos embedding of its cell centre in [0, 1]^2
(so a coarse cell and the fine cells it covers get nearby codes). Blocks are pre-norm with
adaptive layer norm on the class (shift, scale, gate for attention and MLP), and attention is
block-causal: token i sees token j iff ``scale(j) <= scale(i)``. The head predicts the code
index of every token of the scale; the loss is cross-entropy. Classifier-free guidance drops
the class to a null class with probability `cond_drop` in training.

Inference uses the same weights step by step with a KV cache (`toprovar.generation`); the
blocks expose their pieces (`Block.modulation`, `qkv`, `proj`, `mlp`) for that.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn


def sincos_2d(pn: int, dim: int) -> torch.Tensor:
    """``(pn^2, dim)`` fixed 2-D sin-cos embedding of the cell centres ``(i + 0.5) / pn``."""
    if dim % 4:
        raise ValueError(f"dim: expected a multiple of 4, got {dim}")
    c = (torch.arange(pn, dtype=torch.float64) + 0.5) / pn
    yy, xx = torch.meshgrid(c, c, indexing="ij")
    freqs = 2.0 ** torch.arange(dim // 4, dtype=torch.float64) * math.pi
    parts = [f(coord.reshape(-1, 1) * freqs) for coord in (yy, xx) for f in (torch.sin, torch.cos)]
    return torch.cat(parts, 1).float()


def block_causal_mask(scales: Sequence[int]) -> torch.Tensor:
    """``(L, L)`` bool, True where token i may attend token j (``scale(j) <= scale(i)``)."""
    level = torch.cat([torch.full((pn * pn,), k) for k, pn in enumerate(scales)])
    return level[:, None] >= level[None, :]


class Block(nn.Module):
    """Pre-norm transformer block with adaLN-zero-style class modulation."""

    def __init__(self, dim: int, heads: int, mlp_ratio: float = 4.0) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(
            nn.Linear(dim, hidden), nn.GELU(approximate="tanh"), nn.Linear(hidden, dim)
        )
        self.ada_lin = nn.Linear(dim, 6 * dim)
        # adaLN-zero: every residual branch starts closed (gates 0), so the block starts as identity
        nn.init.zeros_(self.ada_lin.weight)
        nn.init.zeros_(self.ada_lin.bias)

    def modulation(self, cond: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``(gamma1, scale1, shift1, gamma2, scale2, shift2)``, each ``(B, 1, dim)``."""
        return tuple(t.unsqueeze(1) for t in self.ada_lin(F.silu(cond)).chunk(6, dim=-1))

    def split_heads(self, t: torch.Tensor) -> torch.Tensor:
        b, n, d = t.shape
        return t.view(b, n, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x: torch.Tensor, cond: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        g1, s1, b1, g2, s2, b2 = self.modulation(cond)
        h = self.norm1(x) * (1 + s1) + b1
        q, k, v = (self.split_heads(t) for t in self.qkv(h).chunk(3, dim=-1))
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + g1 * self.proj(a.transpose(1, 2).reshape(x.shape))
        return x + g2 * self.mlp(self.norm2(x) * (1 + s2) + b2)


class TinyVAR(nn.Module):
    """Class-conditional next-scale transformer over a `MultiScaleVQ`'s codes.

    Args:
        vocab: codebook size; latent: codebook vector size (the word embedding's input).
        scales: the tokenizer's sides ``pn_k``.
        num_classes: classes; index `num_classes` is the null (unconditional) class.
        dim, depth, heads, mlp_ratio: transformer size.
        cond_drop: probability of the null class in training (for CFG).
    """

    pos_2d: torch.Tensor  # (L, dim) buffers, declared for the type checker
    level: torch.Tensor  # (L,)
    mask: torch.Tensor  # (L, L)

    def __init__(
        self,
        vocab: int,
        latent: int,
        scales: Sequence[int],
        num_classes: int,
        dim: int = 64,
        depth: int = 4,
        heads: int = 4,
        mlp_ratio: float = 4.0,
        cond_drop: float = 0.1,
    ) -> None:
        super().__init__()
        if dim % heads or dim % 4:
            raise ValueError(f"dim: expected a multiple of heads={heads} and of 4, got {dim}")
        self.vocab, self.latent, self.scales = vocab, latent, tuple(scales)
        self.num_classes, self.dim, self.depth, self.cond_drop = num_classes, dim, depth, cond_drop
        self.class_emb = nn.Embedding(num_classes + 1, dim)
        self.pos_start = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.word_embed = nn.Linear(latent, dim)
        self.level_emb = nn.Embedding(len(self.scales), dim)
        nn.init.normal_(self.level_emb.weight, std=0.02)
        pos = torch.cat([sincos_2d(pn, dim) for pn in self.scales])
        level = torch.cat([torch.full((pn * pn,), k) for k, pn in enumerate(self.scales)])
        self.register_buffer("pos_2d", pos, persistent=False)
        self.register_buffer("level", level, persistent=False)
        self.register_buffer("mask", block_causal_mask(self.scales), persistent=False)
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio) for _ in range(depth))
        self.head_norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.head_ada = nn.Sequential(nn.SiLU(), nn.Linear(dim, 2 * dim))
        self.head = nn.Linear(dim, vocab)

    def block_list(self) -> list[Block]:
        """The transformer blocks, typed."""
        return [b for b in self.blocks if isinstance(b, Block)]

    @property
    def seq_len(self) -> int:
        return int(self.level.shape[0])

    def offsets(self) -> list[int]:
        """Start index of each scale in the sequence (and the total length last)."""
        out = [0]
        for pn in self.scales:
            out.append(out[-1] + pn * pn)
        return out

    def embed(self, tokens: torch.Tensor, k: int, cond: torch.Tensor) -> torch.Tensor:
        """Scale k's input ``(B, pn_k^2, dim)``: start token (k = 0) or word embedding, plus positions."""
        lo, hi = self.offsets()[k], self.offsets()[k + 1]
        x = cond.unsqueeze(1) + self.pos_start if k == 0 else self.word_embed(tokens)
        return x + self.pos_2d[lo:hi] + self.level_emb.weight[k]

    def head_logits(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        scale, shift = self.head_ada(cond).unsqueeze(1).chunk(2, dim=-1)
        return self.head(self.head_norm(x) * (1 + scale) + shift)

    def condition(self, labels: torch.Tensor) -> torch.Tensor:
        return self.class_emb(labels)

    def forward(self, labels: torch.Tensor, next_inputs: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits ``(B, L, vocab)``.

        `labels` ``(B,)`` (the null class allowed); `next_inputs` ``(B, L - 1, latent)`` from
        `MultiScaleVQ.next_scale_inputs`.
        """
        cond = self.condition(labels)
        x0 = cond.unsqueeze(1) + self.pos_start
        x = torch.cat([x0, self.word_embed(next_inputs)], 1)
        x = x + self.pos_2d + self.level_emb(self.level)
        for blk in self.block_list():
            x = blk(x, cond, self.mask)
        return self.head_logits(x, cond)
