r"""`FEMAttention`, the Free Energy Mixer as a drop-in attention layer, and its base read.

``FEMAttention(config)(x) -> y``, ``x, y (batch, time, d_model)``. Per token (Lu & Yang 2026,
the paper's two-level gated FEM; defaults from the public ``fem.py``):

1. $V = W_v x$, $Q = W_q x$, $K = W_k x$; with TDC, $V \leftarrow V(1 + s_v)$,
   $Q \leftarrow Q(1 + s_q)$, $K \leftarrow K(1 + s_k)$; then RoPE on $Q, K$.
2. The prior reads $[V_c ; e^{\beta V_c - M}]$ once (`free_energy_read`): $\mu$ and $F$.
3. Inner gate $\lambda = \sigma(W_\lambda x \odot (1 + s_\lambda))$ per token and channel;
   outer gate $g = \mathrm{softplus}(W_g x \odot (1 + s_g)) + 10^{-6}$, L2-normalised over the
   head's value channels and scaled by $\sqrt{d_v}$.
4. $o = g \odot ((1 - \lambda)\mu + \lambda F)$, $y = W_o o$.

$\beta_j = \mathrm{softplus}(\theta_j) + 10^{-6}$ per value channel, $\theta$ initialised to
1.8 ($\beta \approx 1.953$). Width budget: value width $E = $ `fem_ratio` $\cdot D$ rounded to
the nearest multiple of ``4 * heads`` (so $(E / \text{heads}) \% 4 = 0$); $|Q| = |K| =$
`p_t_to_fem_ratio` $\cdot E / 2$ rounded to a multiple of ``2 * heads`` (even per-head width
for RoPE). With the defaults (0.5, 4.0) the seven projections hold $8DE = 4D^2$ weights,
those of standard attention.

`BaseAttention` is the same prior read without FEM (Q, K, V, O of width D): the baseline
every FEM variant is compared with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from free_energy_mixer._checks import check_positive, check_tensor
from free_energy_mixer.fem import DEFAULT_CAP, combine, free_energy_read
from free_energy_mixer.priors import (
    Prior,
    chunk_normalized_read,
    feature_map,
    recurrent_normalized_read,
)
from free_energy_mixer.tdc import TimeDecayCondition

PRIORS = ("softmax", "linear", "gla")


def _round_to(x: float, base: int) -> int:
    """The positive multiple of `base` nearest to `x` (ties to the larger)."""
    return max(base, base * math.floor(x / base + 0.5))


@dataclass
class FEMConfig:
    """One FEM layer. Defaults: the public code's."""

    d_model: int
    num_heads: int
    prior: str = "softmax"  # "softmax" | "linear" | "gla"
    fem_ratio: float = 0.5  # value width E ~ fem_ratio * d_model
    p_t_to_fem_ratio: float = 4.0  # |Q| + |K| ~ p_t_to_fem_ratio * E
    beta_init: float = 1.8  # theta_0: beta = softplus(1.8) + 1e-6 ~ 1.953
    value_cap: float = DEFAULT_CAP  # |beta * V_c| <= cap
    use_tdc: bool = True  # time-decay conditioning (on in the public code)
    tdc_hidden: int = 64  # TDC scan rank
    use_rope: bool = True
    rope_base: float = 10000.0
    chunk_size: int = 64  # chunk of the linear priors' chunkwise form
    bias: bool = True

    def __post_init__(self) -> None:
        check_positive("d_model", self.d_model, integer=True)
        check_positive("num_heads", self.num_heads, integer=True)
        if self.prior not in PRIORS:
            raise ValueError(f"prior: expected one of {PRIORS}, got {self.prior!r}")
        for name in ("fem_ratio", "p_t_to_fem_ratio", "value_cap", "rope_base"):
            check_positive(name, getattr(self, name))
        if not isinstance(self.beta_init, (int, float)) or not math.isfinite(self.beta_init):
            raise ValueError(f"beta_init: expected a finite number, got {self.beta_init!r}")
        check_positive("tdc_hidden", self.tdc_hidden, integer=True)
        check_positive("chunk_size", self.chunk_size, integer=True)

    @property
    def value_dim(self) -> int:
        """E: nearest multiple of 4 * heads to fem_ratio * d_model."""
        return _round_to(self.fem_ratio * self.d_model, 4 * self.num_heads)

    @property
    def qk_dim(self) -> int:
        """|Q| = |K|: nearest multiple of 2 * heads to p_t_to_fem_ratio * E / 2."""
        return _round_to(0.5 * self.p_t_to_fem_ratio * self.value_dim, 2 * self.num_heads)


class RotaryEmbedding(nn.Module):
    """RoPE (rotate-half form) on ``(B, H, T, d)`` from position `offset`."""

    inv_freq: torch.Tensor

    def __init__(self, dim: int, base: float = 10000.0) -> None:
        super().__init__()
        self.dim, self.base = dim, base
        self.register_buffer("inv_freq", self.frequencies(), persistent=False)

    def frequencies(self) -> torch.Tensor:
        """``base^(-2i / dim)``, ``i < dim / 2`` (float32): what `inv_freq` holds (it is not
        saved with the weights, so a loader that builds the model empty refills it from here)."""
        i = torch.arange(0, self.dim, 2, dtype=torch.float64)
        return (1.0 / (self.base ** (i / self.dim))).float()

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        T = x.shape[2]
        t = torch.arange(offset, offset + T, device=x.device, dtype=torch.float32)
        # angles in float32 whatever the buffer's dtype (a float64 model cast with .to() and
        # one loaded with from_pretrained(dtype=float64) then rotate alike)
        ang = torch.outer(t, self.inv_freq.to(device=x.device, dtype=torch.float32))
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


@dataclass
class FEMCache:
    """Decoding state of one layer, updated in place by ``forward(x, cache)``.

    Softmax prior: every past key and value input (memory grows with t); linear priors: the
    state ``(B, H, d_k, d_v + 1)`` (constant memory); TDC: its scan state.
    """

    position: int = 0
    keys: torch.Tensor | None = None
    values: torch.Tensor | None = None
    state: torch.Tensor | None = None
    tdc: torch.Tensor | None = None


def _split(x: torch.Tensor, heads: int) -> torch.Tensor:
    B, T, D = x.shape
    return x.view(B, T, heads, D // heads).transpose(1, 2)  # (B, H, T, D/H)


def _merge(x: torch.Tensor) -> torch.Tensor:
    B, H, T, d = x.shape
    return x.transpose(1, 2).reshape(B, T, H * d)


def _softmax_with_cache(cache: FEMCache) -> Prior:
    """Causal softmax read over the cached keys/values and the new ones (appended to the cache)."""

    def read(q: torch.Tensor, k: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        if cache.keys is not None and cache.values is not None:
            k = torch.cat([cache.keys, k], dim=2)
            values = torch.cat([cache.values, values], dim=2)
        cache.keys, cache.values = k, values
        T, S = q.shape[2], k.shape[2]
        if T == S:
            return F.scaled_dot_product_attention(q, k, values, is_causal=True)
        pos_q = torch.arange(S - T, S, device=q.device)[:, None]
        mask = torch.arange(S, device=q.device)[None, :] <= pos_q
        return F.scaled_dot_product_attention(q, k, values, attn_mask=mask)

    return read


def _linear_read(log_decay: torch.Tensor | None, chunk_size: int, cache: FEMCache | None) -> Prior:
    """The (gated) linear prior; with a cache, starts from and stores its state."""

    def read(q: torch.Tensor, k: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        state = cache.state if cache is not None else None
        if cache is not None and q.shape[2] == 1:  # decoding step: constant memory
            out, state = recurrent_normalized_read(
                feature_map(q), feature_map(k), values, log_decay, state=state
            )
        else:
            out, state = chunk_normalized_read(
                feature_map(q), feature_map(k), values, log_decay, chunk_size=chunk_size,
                state=state,
            )  # fmt: skip
        if cache is not None:
            cache.state = state
        return out

    return read


def _check_input(x: object, d_model: int) -> torch.Tensor:
    x = check_tensor("x", x, 3, "(batch, time, d_model)")
    if x.shape[-1] != d_model:
        raise ValueError(f"x: expected last dimension d_model={d_model}, got {tuple(x.shape)}")
    return x


def _init_linears(module: nn.Module) -> None:
    """N(0, 0.02) weights and zero biases for every Linear (public code)."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


class FEMAttention(nn.Module):
    """The Free Energy Mixer layer (module docstring). A custom `prior_fn` replaces the named
    prior (then no decoding cache)."""

    def __init__(self, config: FEMConfig, prior_fn: Prior | None = None) -> None:
        super().__init__()
        if not isinstance(config, FEMConfig):
            raise TypeError(f"config: expected a FEMConfig, got {type(config).__name__}")
        self.config = config
        D, H = config.d_model, config.num_heads
        E, QK = config.value_dim, config.qk_dim
        self.heads, self.d_v, self.d_k = H, E // H, QK // H
        self.prior_fn = prior_fn
        self.W_v = nn.Linear(D, E, bias=config.bias)
        self.W_q = nn.Linear(D, QK, bias=config.bias)
        self.W_k = nn.Linear(D, QK, bias=config.bias)
        self.W_lambda = nn.Linear(D, E, bias=config.bias)
        self.W_g = nn.Linear(D, E, bias=config.bias)
        self.W_o = nn.Linear(E, D, bias=config.bias)
        self.W_decay = nn.Linear(D, H, bias=config.bias) if config.prior == "gla" else None
        # theta: beta_j = softplus(theta_j) + 1e-6; 1.8 gives beta ~ 1.95 (public beta_max_init)
        self.theta = nn.Parameter(torch.full((E,), float(config.beta_init)))
        self.rope = RotaryEmbedding(self.d_k, config.rope_base) if config.use_rope else None
        self.tdc = (
            TimeDecayCondition(D, 3 * E + 2 * QK, config.tdc_hidden, config.bias)
            if config.use_tdc
            else None
        )
        _init_linears(self)

    @property
    def beta(self) -> torch.Tensor:
        """Inverse temperatures ``(heads, d_v)``: ``softplus(theta) + 1e-6``."""
        return (F.softplus(self.theta) + 1e-6).view(self.heads, self.d_v)

    def forward(self, x: torch.Tensor, cache: FEMCache | None = None) -> torch.Tensor:
        """``x (B, T, d_model) -> (B, T, d_model)``; with `cache`, continue from its position."""
        cfg = self.config
        x = _check_input(x, cfg.d_model)
        if x.dtype != self.W_v.weight.dtype:
            raise TypeError(
                f"x: expected dtype {self.W_v.weight.dtype} (the layer's parameters), got "
                f"{x.dtype}; cast x, or the layer with .to({x.dtype})"
            )
        if cache is not None and self.prior_fn is not None:
            raise ValueError("cache: decoding needs a named prior, not a custom prior_fn")
        H, E, QK = self.heads, cfg.value_dim, cfg.qk_dim
        v, q, k = self.W_v(x), self.W_q(x), self.W_k(x)
        lam_logit, g_logit = self.W_lambda(x), self.W_g(x)
        if self.tdc is not None:
            s, tdc_state = self.tdc(x, None if cache is None else cache.tdc)
            s_v, s_q, s_k, s_lam, s_g = s.split([E, QK, QK, E, E], dim=-1)
            v, q, k = v * (1 + s_v), q * (1 + s_q), k * (1 + s_k)
            lam_logit, g_logit = lam_logit * (1 + s_lam), g_logit * (1 + s_g)
            if cache is not None:
                cache.tdc = tdc_state
        offset = 0 if cache is None else cache.position
        vh, qh, kh = _split(v, H), _split(q, H), _split(k, H)
        if self.rope is not None:
            qh, kh = self.rope(qh, offset), self.rope(kh, offset)
        prior = self._prior(x, cache)
        mu, free = free_energy_read(prior, qh, kh, vh, self.beta.to(x.dtype), cap=cfg.value_cap)
        lam = torch.sigmoid(_split(lam_logit, H))
        g = F.softplus(_split(g_logit, H)) + 1e-6
        g = F.normalize(g, dim=-1, eps=1e-5) * math.sqrt(self.d_v)
        if cache is not None:
            cache.position += x.shape[1]
        return self.W_o(_merge(combine(mu, free, lam, g)))

    def _prior(self, x: torch.Tensor, cache: FEMCache | None) -> Prior:
        if self.prior_fn is not None:
            return self.prior_fn
        name = self.config.prior
        if name == "softmax":
            return _softmax_with_cache(cache) if cache is not None else _plain_softmax
        log_decay = None
        if self.W_decay is not None:  # a_t = -(ReLU(W_a x) + 1e-6) per head (public code)
            log_decay = -(F.relu(self.W_decay(x)) + 1e-6).transpose(1, 2)
        return _linear_read(log_decay, self.config.chunk_size, cache)


def _plain_softmax(q: torch.Tensor, k: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, values, is_causal=True)


class BaseAttention(nn.Module):
    """The base read FEM is compared with: multi-head softmax, linear or GLA attention with
    Q, K, V, O of width d_model, RoPE, and the same prior functions (no FEM, no gates, no TDC)."""

    def __init__(self, config: FEMConfig) -> None:
        super().__init__()
        if not isinstance(config, FEMConfig):
            raise TypeError(f"config: expected a FEMConfig, got {type(config).__name__}")
        D, H = config.d_model, config.num_heads
        if D % (2 * H):
            raise ValueError(f"d_model: expected a multiple of 2 * num_heads = {2 * H}, got {D}")
        self.config = config
        self.heads = H
        self.W_q = nn.Linear(D, D, bias=config.bias)
        self.W_k = nn.Linear(D, D, bias=config.bias)
        self.W_v = nn.Linear(D, D, bias=config.bias)
        self.W_o = nn.Linear(D, D, bias=config.bias)
        self.W_decay = nn.Linear(D, H, bias=config.bias) if config.prior == "gla" else None
        self.rope = RotaryEmbedding(D // H, config.rope_base) if config.use_rope else None
        _init_linears(self)

    def forward(self, x: torch.Tensor, cache: FEMCache | None = None) -> torch.Tensor:
        """``x (B, T, d_model) -> (B, T, d_model)``."""
        cfg = self.config
        x = _check_input(x, cfg.d_model)
        H = self.heads
        qh, kh, vh = _split(self.W_q(x), H), _split(self.W_k(x), H), _split(self.W_v(x), H)
        offset = 0 if cache is None else cache.position
        if self.rope is not None:
            qh, kh = self.rope(qh, offset), self.rope(kh, offset)
        if cfg.prior == "softmax":
            prior = _softmax_with_cache(cache) if cache is not None else _plain_softmax
        else:
            log_decay = None
            if self.W_decay is not None:
                log_decay = -(F.relu(self.W_decay(x)) + 1e-6).transpose(1, 2)
            prior = _linear_read(log_decay, cfg.chunk_size, cache)
        out = prior(qh, kh, vh)
        if cache is not None:
            cache.position += x.shape[1]
        return self.W_o(_merge(out))
