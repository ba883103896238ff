r"""Time-decay conditioning (TDC): a low-rank decaying scan whose projection modulates FEM.

The public code's TDC layer (on by default) computes, from $\tilde x = \mathrm{LN}(x)$,

$$a_t = -\mathrm{softplus}(W_a \tilde x_t) \le 0, \quad u_t = W_u \tilde x_t, \quad c_t = \sum_{s \le t} a_s,$$

$$h_t = e^{a_t} h_{t-1} + u_t = \sum_{i \le t} e^{c_t - c_i} u_i,$$

then $s_t = \big(\sigma_t \odot \mathrm{LN}(h_t)\big) W_o$ with a positive, L2-normalised
shortcut $\sigma_t$ and a zero-initialised $W_o$, so the modulations are 0 at
initialisation and FEM starts as the layer without TDC.

The public form evaluates the sum as ``exp(c) * cumsum(u / exp(c))``: $c_t$ falls without
bound, so on long sequences $e^{-c}$ overflows and $e^{c}$ underflows (inf * 0 = NaN). Here
the same recurrence is a chunked scan (`decay_scan`): inside a chunk the weights
$e^{b_t - b_i}$ ($b$ the within-chunk cumulative sum, $i \le t$) have exponents $\le 0$; the
state is carried from chunk to chunk by $h \leftarrow e^{b_\text{last}} h + \ldots$, again with
a non-positive exponent. Nothing overflows, at any length.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def decay_scan(
    log_decay: torch.Tensor,
    u: torch.Tensor,
    *,
    chunk_size: int = 32,
    state: torch.Tensor | None = None,
    check: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``h_t = exp(a_t) h_{t-1} + u_t`` per channel, as a numerically stable chunked scan.

    Args:
        log_decay: ``a`` ``(B, T, N)``, entries <= 0.
        u: inputs ``(B, T, N)``.
        chunk_size: positions per chunk (memory ``B * T * chunk_size * N``).
        state: ``h`` before the first position ``(B, N)``; None is zero.
        check: refuse NaN or positive `log_decay` and non-finite `u` (one device sync; the
            TDC layer, whose decays are ``-softplus`` by construction, skips it).

    Returns:
        ``(h (B, T, N), h_T (B, N))``.
    """
    if not isinstance(u, torch.Tensor) or u.ndim != 3 or u.numel() == 0:
        got = tuple(u.shape) if isinstance(u, torch.Tensor) else type(u).__name__
        raise ValueError(f"u: expected a non-empty tensor (batch, time, channels), got {got}")
    if not isinstance(log_decay, torch.Tensor) or log_decay.shape != u.shape:
        got = tuple(log_decay.shape) if isinstance(log_decay, torch.Tensor) else log_decay
        raise ValueError(f"log_decay: expected the shape of u {tuple(u.shape)}, got {got}")
    if state is not None and (
        not isinstance(state, torch.Tensor) or state.shape != (u.shape[0], u.shape[2])
    ):
        got = tuple(state.shape) if isinstance(state, torch.Tensor) else state
        raise ValueError(
            f"state: expected shape (batch, channels) = {(u.shape[0], u.shape[2])}, got {got}"
        )
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size: expected a positive int, got {chunk_size!r}")
    if check:
        if bool(torch.isnan(log_decay).any()) or bool((log_decay > 0).any()):
            raise ValueError(
                "log_decay: expected entries <= 0 (decays exp(a) in [0, 1]), got NaN or a "
                f"positive entry (max {float(log_decay.max())})"
            )
        if not bool(torch.isfinite(u).all()):
            raise ValueError("u: expected finite inputs, got NaN or inf")
    B, T, N = u.shape
    C = min(chunk_size, T)
    pad = (-T) % C
    if pad:  # a = 0, u = 0 after the end: h_T is carried unchanged through the padding
        log_decay = F.pad(log_decay, (0, 0, 0, pad))
        u = F.pad(u, (0, 0, 0, pad))
    n = (T + pad) // C
    b = log_decay.reshape(B, n, C, N).cumsum(2)
    uu = u.reshape(B, n, C, N)
    causal = torch.ones(C, C, dtype=torch.bool, device=u.device).tril()[None, None, :, :, None]
    diff = torch.where(causal, b[:, :, :, None, :] - b[:, :, None, :, :], -math.inf)
    intra = (diff.exp() * uu[:, :, None, :, :]).sum(3)  # (B, n, C, N)
    h = state if state is not None else u.new_zeros(B, N)
    carry = b.exp()  # decay from the chunk start to each position
    outs = []
    for c in range(n):
        hc = intra[:, c] + carry[:, c] * h[:, None, :]
        outs.append(hc)
        h = hc[:, -1]
    out = torch.cat(outs, dim=1)[:, :T]
    return out, h


class TimeDecayCondition(nn.Module):
    """TDC: ``x (B, T, d_model) -> s (B, T, out_dim)``, zero at initialisation.

    `hidden` is the scan's rank (public default 64).
    """

    def __init__(self, d_model: int, out_dim: int, hidden: int = 64, bias: bool = True) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model, bias=bias)
        self.decay = nn.Linear(d_model, hidden, bias=bias)
        self.value = nn.Linear(d_model, hidden, bias=bias)
        self.shortcut = nn.Linear(d_model, hidden, bias=bias)
        self.out_norm = nn.LayerNorm(hidden, bias=bias)
        # zero so that every modulation (1 + s) starts at exactly 1: FEM without TDC
        self.out_proj = nn.Parameter(torch.zeros(hidden, out_dim))

    def forward(
        self, x: torch.Tensor, state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Modulations ``(B, T, out_dim)`` and the scan state after the last position ``(B, hidden)``."""
        xn = self.norm(x)
        sc = F.softplus(self.shortcut(xn)) + 1e-8
        sc = F.normalize(sc, dim=-1, eps=1e-8) * math.sqrt(sc.shape[-1])
        h, last = decay_scan(-F.softplus(self.decay(xn)), self.value(xn), state=state, check=False)
        return (sc * self.out_norm(h)) @ self.out_proj, last
