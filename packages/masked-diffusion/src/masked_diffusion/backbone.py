"""A small bidirectional transformer denoiser with an adaLN conditioning hook (MDLM's DiT, shrunk).

Pre-norm blocks, rotary position embeddings (1-D over the sequence, or 2-D axial over an image
grid ``(height, width)`` flattened row-major; optionally plus learned absolute positions), GELU MLP, no causal mask. The input vocabulary is
``vocab_size + 1`` (the mask id is ``vocab_size``); the output head has ``vocab_size`` logits, so the
mask token never gets probability (SUBS zero masking).

Conditioning (the hook vadd uses): ``forward(x_t, t=None, cond=None)``. A conditioning vector
``c`` is the sum of ``cond_proj(cond)`` (when ``d_cond`` is set and `cond` is given) and a time
embedding of `t` (when ``time_conditioning``). Every block and the final norm are modulated by
adaLN, ``LN(h) * (1 + scale) + shift`` and residual gate ``(1 + gate)``, with
``(shift, scale, gate) = W c`` from a **bias-free, zero-initialised** linear map. Hence
``c = 0`` (cond=None, or a zero `cond` with time conditioning off) gives *exactly* the
unconditioned transformer, at any point of training; and at initialisation any `cond` is a no-op.
`cond` may be global (batch, d_cond) or per token (batch, length, d_cond).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class TransformerSize:
    """The sizes every denoiser here shares (MDLM's and `pgm.PGMConfig`): the vocabulary (without
    the mask or BOS id), the sequence length, the width and the number of attention heads."""

    vocab_size: int
    seq_len: int
    d_model: int = 128
    n_heads: int = 4

    def __post_init__(self) -> None:
        for name in ("vocab_size", "seq_len", "d_model", "n_heads"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")


@dataclass(frozen=True)
class BackboneConfig(TransformerSize):
    """Size of the denoiser. ``grid=(H, W)`` switches to 2-D rotary positions (H * W = seq_len).

    RoPE only encodes *relative* positions, so on a constant input (the all-mask start) every
    position gets the same output. Text windows are roughly stationary, so MDLM's RoPE-only
    choice is fine there; for image grids set ``learned_positions=True`` to add a learned
    absolute position embedding to the input as well.
    """

    n_layers: int = 4
    mlp_ratio: int = 4
    dropout: float = 0.0
    d_cond: int | None = None
    time_conditioning: bool = False
    grid: tuple[int, int] | None = None
    learned_positions: bool = False
    rope_base: float = 10000.0

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("n_layers", "mlp_ratio"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads: must divide d_model={self.d_model}, got {self.n_heads}")
        head_dim = self.d_model // self.n_heads
        if head_dim % (4 if self.grid else 2):
            raise ValueError(f"d_model: head dim {head_dim} must be divisible by 4 (grid) or 2")
        if self.grid is not None and self.grid[0] * self.grid[1] != self.seq_len:
            raise ValueError(f"grid: expected H * W == seq_len={self.seq_len}, got {self.grid}")
        if self.d_cond is not None and self.d_cond <= 0:
            raise ValueError(f"d_cond: expected a positive int or None, got {self.d_cond!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout: expected a probability in [0, 1), got {self.dropout!r}")


def rotary_angles(positions: torch.Tensor, dim: int, base: float) -> torch.Tensor:
    """Angles (length, dim / 2) of RoPE for integer `positions` (length,) or (length, axes).

    With several axes the frequency bands are split equally between them (axial RoPE).
    """
    if positions.ndim == 1:
        positions = positions[:, None]
    axes = positions.shape[1]
    per_axis = dim // (2 * axes)
    inv = base ** (-torch.arange(per_axis, dtype=torch.float32) / per_axis)
    return torch.cat([positions[:, a : a + 1].float() * inv for a in range(axes)], dim=-1)


def apply_rotary(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate pairs ``(x[..., :d/2], x[..., d/2:])`` of x (batch, heads, length, d) by `angles`."""
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    """Sinusoidal embedding (batch, dim) of times t (batch,) (DiT ``TimestepEmbedder``)."""
    half = dim // 2
    # float32 at least; float64 times keep float64 throughout (the precision tests' reference:
    # float32 frequencies differ by an ulp between CPU and CUDA, ~1e-6 after the factor 1000)
    dtype = torch.promote_types(t.dtype, torch.float32)
    freqs = torch.exp(
        -math.log(max_period) * torch.arange(half, device=t.device, dtype=dtype) / half
    )
    args = t.to(dtype)[:, None] * freqs[None] * 1000.0
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def _modulate(h: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return h * (1.0 + scale) + shift


def feed_forward(d: int, ratio: int) -> nn.Sequential:
    """MDLM's MLP: ``Linear(d, ratio d)``, GELU (tanh approximation), ``Linear(ratio d, d)``."""
    return nn.Sequential(
        nn.Linear(d, ratio * d), nn.GELU(approximate="tanh"), nn.Linear(ratio * d, d)
    )


class PreNormBlock(nn.Module):
    """The layers of a pre-norm self-attention block, without its forward: ``norm1``, ``qkv``
    (``d -> 3d``, no bias), ``proj`` (no bias), ``norm2`` and the `feed_forward` ``mlp``.
    MDLM's `Block` and PGM's encoder block subclass it (same layers, same initialisation order)."""

    def __init__(self, d: int, n_heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.norm1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = feed_forward(d, mlp_ratio)


class Block(PreNormBlock):
    """Pre-norm bidirectional self-attention + MLP, both adaLN-modulated when ``c`` is given."""

    def __init__(self, cfg: BackboneConfig, d_c: int | None) -> None:
        super().__init__(cfg.d_model, cfg.n_heads, cfg.mlp_ratio)
        d = cfg.d_model
        self.dropout = nn.Dropout(cfg.dropout)
        self.p_drop = cfg.dropout
        self.ada = None
        if d_c is not None:
            # Zero weights, no bias: c = 0 <=> plain block, and any c is a no-op at init.
            self.ada = nn.Linear(d_c, 6 * d, bias=False)
            nn.init.zeros_(self.ada.weight)

    def forward(
        self, h: torch.Tensor, angles: torch.Tensor, c: torch.Tensor | None
    ) -> torch.Tensor:
        b, n, d = h.shape
        if self.ada is not None and c is not None:
            mod = self.ada(c)
            if mod.ndim == 2:
                mod = mod[:, None, :]
            sh1, sc1, g1, sh2, sc2, g2 = mod.chunk(6, dim=-1)
        else:
            sh1 = sc1 = g1 = sh2 = sc2 = g2 = None
        x = self.norm1(h)
        if sh1 is not None:
            x = _modulate(x, sh1, sc1)
        q, k, v = self.qkv(x).view(b, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        q, k = apply_rotary(q, angles), apply_rotary(k, angles)
        a = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p_drop if self.training else 0.0)
        a = self.dropout(self.proj(a.transpose(1, 2).reshape(b, n, d)))
        h = h + (a if g1 is None else a * (1.0 + g1))
        x = self.norm2(h)
        if sh2 is not None:
            x = _modulate(x, sh2, sc2)
        m = self.dropout(self.mlp(x))
        return h + (m if g2 is None else m * (1.0 + g2))


class MaskedDiffusionTransformer(nn.Module):
    """The MDLM denoiser ``x_theta(x_t, t[, cond]) -> logits (batch, length, vocab_size)``.

    Initialisation: embeddings N(0, 0.02); output head zero-initialised (MDLM's DDiTFinalLayer),
    so the untrained model predicts the uniform distribution; adaLN maps zero (see module doc).
    """

    def __init__(self, cfg: BackboneConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        d_c = None
        if cfg.d_cond is not None or cfg.time_conditioning:
            d_c = d
        self.d_c = d_c
        self.embed = nn.Embedding(cfg.vocab_size + 1, d)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.pos_embed = None
        if cfg.learned_positions:
            self.pos_embed = nn.Parameter(torch.randn(cfg.seq_len, d) * 0.02)
        self.cond_proj = nn.Linear(cfg.d_cond, d) if cfg.d_cond is not None else None
        self.time_mlp = (
            nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, d))
            if cfg.time_conditioning
            else None
        )
        self.blocks = nn.ModuleList(Block(cfg, d_c) for _ in range(cfg.n_layers))
        self.norm_f = nn.LayerNorm(d)
        self.ada_f = None
        if d_c is not None:
            self.ada_f = nn.Linear(d_c, 2 * d, bias=False)
            nn.init.zeros_(self.ada_f.weight)
        self.head = nn.Linear(d, cfg.vocab_size)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)
        if cfg.grid is not None:
            rows, cols = torch.meshgrid(
                torch.arange(cfg.grid[0]), torch.arange(cfg.grid[1]), indexing="ij"
            )
            pos = torch.stack([rows.flatten(), cols.flatten()], dim=-1)
        else:
            pos = torch.arange(cfg.seq_len)
        angles = rotary_angles(pos, d // cfg.n_heads, cfg.rope_base)
        self.register_buffer("angles", angles, persistent=False)

    @property
    def mask_id(self) -> int:
        return self.cfg.vocab_size

    def conditioning(
        self, t: torch.Tensor | None, cond: torch.Tensor | None, batch: int, length: int
    ) -> torch.Tensor | None:
        """The adaLN vector c (batch, d) or (batch, length, d), or None when nothing conditions."""
        c = None
        if cond is not None:
            if self.cond_proj is None:
                raise ValueError("cond: this model was built with d_cond=None; pass cond=None")
            dc = self.cfg.d_cond
            if not (
                (cond.ndim == 2 and tuple(cond.shape) == (batch, dc))
                or (cond.ndim == 3 and tuple(cond.shape) == (batch, length, dc))
            ):
                raise ValueError(
                    f"cond: expected shape ({batch}, {dc}) or ({batch}, {length}, {dc}), "
                    f"got {tuple(cond.shape)}"
                )
            if torch.isnan(cond).any():
                raise ValueError("cond: contains NaN")
            c = self.cond_proj(cond)
        if self.time_mlp is not None and t is not None:
            emb = timestep_embedding(t, self.cfg.d_model)
            te = self.time_mlp(emb.to(self.norm_f.weight.dtype))
            c = te if c is None else (c + te if c.ndim == 2 else c + te[:, None])
        return c

    def forward(
        self, x_t: torch.Tensor, t: torch.Tensor | None = None, cond: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits (batch, length, vocab_size) for tokens x_t (batch, length) in [0, vocab_size].

        t: (batch,) times, used only with ``time_conditioning``; cond: (batch, d_cond) or
        (batch, length, d_cond), used only with ``d_cond``.
        """
        if x_t.ndim != 2 or x_t.shape[1] != self.cfg.seq_len:
            raise ValueError(
                f"x_t: expected shape (batch, {self.cfg.seq_len}), got {tuple(x_t.shape)}"
            )
        if x_t.shape[0] == 0:
            raise ValueError(f"x_t: expected a non-empty batch, got shape {tuple(x_t.shape)}")
        if x_t.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"x_t: expected an int64/int32 tensor, got dtype {x_t.dtype}")
        if int(x_t.min()) < 0 or int(x_t.max()) > self.cfg.vocab_size:
            raise ValueError(
                f"x_t: token ids must lie in [0, {self.cfg.vocab_size}] (mask id included), "
                f"got range [{int(x_t.min())}, {int(x_t.max())}]"
            )
        if t is not None and (t.ndim != 1 or t.shape[0] != x_t.shape[0]):
            raise ValueError(f"t: expected shape ({x_t.shape[0]},), got {tuple(t.shape)}")
        b, n = x_t.shape
        c = self.conditioning(t, cond, b, n)
        h = self.embed(x_t)
        if self.pos_embed is not None:
            h = h + self.pos_embed
        for block in self.blocks:
            h = block(h, self.angles, c)
        h = self.norm_f(h)
        if self.ada_f is not None and c is not None:
            mod = self.ada_f(c)
            if mod.ndim == 2:
                mod = mod[:, None, :]
            shift, scale = mod.chunk(2, dim=-1)
            h = _modulate(h, shift, scale)
        return self.head(h)
