"""Baselines of the same width as the Mesa layer: gated linear attention, DeltaNet, softmax attention.

All share the Mesa layer's interface ``forward(x, cg_steps=None) -> y`` (``cg_steps`` is
ignored) and, for the linear RNNs, its front end (short conv + SiLU on q/k, L2 norm,
per-head RMSNorm on the output), so the comparison isolates the sequence-mixing rule.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from mesa_layer.torch._checks import check_features, check_heads, upcast
from mesa_layer.torch.chunk import chunk_states, from_chunks, gate_mask, gla_pass, to_chunks
from mesa_layer.torch.layer import ShortConvolution


def gated_linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    chunk_size: int = 64,
) -> torch.Tensor:
    """``o_t = G_t q_t`` with ``G_t = gamma_t G_{t-1} + beta_t v_t k_t^T``, chunkwise (``(B, T, H, ·)``).

    This is the Mesa layer with ``(H_t + Lambda)^{-1}`` replaced by the identity.
    """
    B, T, NH, K = q.shape
    C = min(chunk_size, T)
    T_pad = -(-T // C) * C

    def prep(x: torch.Tensor) -> torch.Tensor:
        x = upcast(x)
        if T_pad > T:
            x = torch.cat([x, x.new_zeros(B, T_pad - T, *x.shape[2:])], 1)
        return to_chunks(x, C)

    q_c, k_c, v_c, g_c, beta_c = (prep(x) for x in (q, k, v, g, beta))
    b = g_c.cumsum(-1)
    M = gate_mask(b, beta_c)
    G_start, _ = chunk_states(k_c, v_c, b, beta_c, q_c.new_zeros(B, NH, v.shape[-1], K))
    return from_chunks(gla_pass(q_c, k_c, v_c, G_start, b.exp(), M))[:, :T].to(v.dtype)


def delta_rule(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor, chunk_size: int = 64
) -> torch.Tensor:
    """DeltaNet ``Phi_t = Phi_{t-1} + beta_t (v_t - Phi_{t-1} k_t) k_t^T``, ``o_t = Phi_t q_t``.

    Chunkwise (WY form): within a chunk with start state ``Phi_0`` the pseudo-values
    ``u_t = beta_t (v_t - Phi_{t-1} k_t)`` solve the unit lower-triangular system
    ``(I + diag(beta) tril(K K^T, -1)) U = diag(beta) (V - K Phi_0^T)``; then
    ``O = Q Phi_0^T + tril(Q K^T) U`` and ``Phi <- Phi_0 + U^T K``. Shapes ``(B, T, H, ·)``.
    """
    B, T, NH, K = q.shape
    C = min(chunk_size, T)
    T_pad = -(-T // C) * C

    def prep(x: torch.Tensor) -> torch.Tensor:
        x = upcast(x)
        if T_pad > T:
            x = torch.cat([x, x.new_zeros(B, T_pad - T, *x.shape[2:])], 1)
        return to_chunks(x, C)

    q_c, k_c, v_c, beta_c = (prep(x) for x in (q, k, v, beta))
    strict = torch.ones(C, C, dtype=torch.bool, device=q.device).tril(-1)
    incl = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    kk = k_c @ k_c.transpose(-1, -2)
    L = torch.eye(C, dtype=kk.dtype, device=kk.device) + beta_c[..., None] * kk * strict
    Phi = q_c.new_zeros(B, NH, v.shape[-1], K)
    outs = []
    for n in range(q_c.shape[2]):
        kn, qn, bn = k_c[:, :, n], q_c[:, :, n], beta_c[:, :, n, :, None]
        rhs = bn * (v_c[:, :, n] - kn @ Phi.transpose(-1, -2))
        U = torch.linalg.solve_triangular(L[:, :, n], rhs, upper=False, unitriangular=True)
        outs.append(qn @ Phi.transpose(-1, -2) + ((qn @ kn.transpose(-1, -2)) * incl) @ U)
        Phi = Phi + U.transpose(-1, -2) @ kn
    o = torch.stack(outs, 2)
    return from_chunks(o)[:, :T].to(v.dtype)


class _LinearRNNBase(nn.Module):
    def __init__(
        self, hidden_size: int, num_heads: int, conv_size: int = 4, norm_eps: float = 1e-6
    ) -> None:
        super().__init__()
        check_heads(hidden_size, num_heads)
        self.hidden_size, self.num_heads = hidden_size, num_heads
        self.head_dim = hidden_size // num_heads
        self.key_dim = self.head_dim * num_heads
        self.q_proj = nn.Linear(hidden_size, self.key_dim, bias=False)
        self.k_proj = nn.Linear(hidden_size, self.key_dim, bias=False)
        self.v_proj = nn.Linear(hidden_size, self.key_dim, bias=False)
        self.b_proj = nn.Linear(hidden_size, num_heads, bias=True)
        self.q_conv = ShortConvolution(self.key_dim, conv_size)
        self.k_conv = ShortConvolution(self.key_dim, conv_size)
        self.o_norm_weight = nn.Parameter(torch.ones(self.head_dim))
        self.o_proj = nn.Linear(self.key_dim, hidden_size, bias=False)
        self.norm_eps = norm_eps
        nn.init.zeros_(self.b_proj.bias)

    def _qkv(
        self, x: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        B, T, _ = x.shape
        shape = (B, T, self.num_heads, self.head_dim)
        q = F.normalize(upcast(self.q_conv(self.q_proj(x))[0].view(shape)), dim=-1)
        k = F.normalize(upcast(self.k_conv(self.k_proj(x))[0].view(shape)), dim=-1)
        return q, k, self.v_proj(x).view(shape), torch.sigmoid(upcast(self.b_proj(x)))

    def _out(self, o: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        o = F.rms_norm(upcast(o), (self.head_dim,), upcast(self.o_norm_weight), self.norm_eps)
        return self.o_proj(o.reshape(*x.shape[:2], self.key_dim).to(x.dtype))


class GatedLinearAttentionLayer(_LinearRNNBase):
    """Scalar-gated linear attention (the Mesa layer's G recurrence alone), same front end."""

    def __init__(
        self, hidden_size: int, num_heads: int = 4, forget_bias_init: float = 0.0, **kw
    ) -> None:
        super().__init__(hidden_size, num_heads, **kw)
        self.a_proj = nn.Linear(hidden_size, num_heads, bias=True)
        nn.init.constant_(self.a_proj.bias, forget_bias_init)

    def forward(self, x: torch.Tensor, cg_steps: int | None = None) -> torch.Tensor:
        check_features(x, self.hidden_size, self.q_proj.weight.dtype)
        q, k, v, beta = self._qkv(x)
        g = F.logsigmoid(upcast(self.a_proj(x)))
        return self._out(gated_linear_attention(q, k, v, g, beta), x)


class DeltaNetLayer(_LinearRNNBase):
    """DeltaNet (one online-GD step on ``||v_t - Phi k_t||^2`` per token), same front end."""

    def forward(self, x: torch.Tensor, cg_steps: int | None = None) -> torch.Tensor:
        check_features(x, self.hidden_size, self.q_proj.weight.dtype)
        q, k, v, beta = self._qkv(x)
        return self._out(delta_rule(q, k, v, beta), x)


def rotary(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding on ``(B, H, T, D)`` (D even), half-split convention."""
    T, D = x.shape[-2], x.shape[-1]
    freqs = base ** (-torch.arange(0, D, 2, device=x.device, dtype=torch.float32) / D)
    ang = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * freqs
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., : D // 2], x[..., D // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


class SoftmaxAttention(nn.Module):
    """Causal softmax attention with RoPE, the Transformer reference (quadratic in T).

    ``conv_size > 0`` puts the linear RNNs' short causal convolution (+ SiLU) on q and k
    before RoPE, so attention gets the same one-layer token binding as the other mixers
    (used in MQAR); 0 (the default) is plain attention.
    """

    def __init__(self, hidden_size: int, num_heads: int = 4, conv_size: int = 0) -> None:
        super().__init__()
        check_heads(hidden_size, num_heads)
        if not isinstance(conv_size, int) or isinstance(conv_size, bool) or conv_size < 0:
            raise ValueError(f"conv_size: expected a non-negative int, got {conv_size!r}")
        self.hidden_size = hidden_size
        self.num_heads, self.head_dim = num_heads, hidden_size // num_heads
        self.qkv = nn.Linear(hidden_size, 3 * num_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, hidden_size, bias=False)
        dim = num_heads * self.head_dim
        self.q_conv = ShortConvolution(dim, conv_size) if conv_size else None
        self.k_conv = ShortConvolution(dim, conv_size) if conv_size else None

    def forward(self, x: torch.Tensor, cg_steps: int | None = None) -> torch.Tensor:
        check_features(x, self.hidden_size, self.qkv.weight.dtype)
        B, T, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        if self.q_conv is not None and self.k_conv is not None:
            q, k = self.q_conv(q)[0], self.k_conv(k)[0]
        q, k, v = (t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        o = F.scaled_dot_product_attention(rotary(q), rotary(k), v, is_causal=True)
        return self.o_proj(o.transpose(1, 2).reshape(B, T, -1))


__all__ = [
    "DeltaNetLayer",
    "GatedLinearAttentionLayer",
    "SoftmaxAttention",
    "delta_rule",
    "gated_linear_attention",
]
