"""Selection priors p_t(i): normalised causal reads ``(q, k, values) -> read``.

FEM (Lu & Yang 2026) needs of its prior only that it is a normalised causal read:
``read_t = sum_{i<=t} p_t(i) values_i`` with ``p_t(i) >= 0`` and ``sum_i p_t(i) = 1``. Any
callable with the `Prior` signature plugs into `free_energy_read` (an SSM/Mamba-style scan
can be added later the same way). Shapes: ``q, k (batch, heads, time, d_k)``, ``values
(batch, heads, time, d_v)``; the read has the shape of `values`.

Three priors are built in:

- softmax attention, ``p_t(i) = softmax_i(q_t . k_i / sqrt(d_k))`` over ``i <= t``, through
  PyTorch's SDPA;
- linear attention, ``p_t(i) = phi(q_t) . phi(k_i) / sum_{j<=t} phi(q_t) . phi(k_j)`` with
  ``phi = ReLU + 1e-6``;
- gated linear attention (GLA) with a scalar data-dependent decay per head,
  ``p_t(i) ~ exp(c_t - c_i) phi(q_t) . phi(k_i)``, ``c_t = sum_{s<=t} a_s``, ``a_s <= 0``.

The linear priors come in two forms with equal outputs: a chunkwise-parallel one for
training (`chunk_normalized_read`) and a recurrent one for decoding (`recurrent_normalized_read`,
constant memory per step). Both carry one state ``S = sum_i decay * phi(k_i) [v_i, 1]^T``
``(batch, heads, d_k, d_v + 1)`` whose last column is the running key sum, the normaliser.
The chunkwise form follows the usual derivation (e.g. flash-linear-attention's
``naive_chunk_simple_gla``): with ``b`` the within-chunk cumulative log-decay, the output of a
query is the masked intra-chunk product ``(Q K^T * exp(b_t - b_i))_{i<=t} V`` plus
``exp(b_t) Q S_prev``; every exponent is <= 0, so nothing overflows. The causal mask is
applied with `torch.where`, never by multiplication, so a huge (even infinite) future score
cannot turn into NaN at an earlier position.
"""

from __future__ import annotations

from typing import Protocol

import torch
import torch.nn.functional as F

from free_energy_mixer._checks import check_linear_read

FEATURE_EPS = 1e-6  # phi(x) = ReLU(x) + 1e-6 keeps every linear-attention weight > 0


class Prior(Protocol):
    """A normalised causal read: ``prior(q, k, values) -> read`` (shapes in the module doc)."""

    def __call__(self, q: torch.Tensor, k: torch.Tensor, values: torch.Tensor) -> torch.Tensor: ...


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """``phi(x) = ReLU(x) + 1e-6``, the non-negative feature map of the linear priors."""
    return F.relu(x) + FEATURE_EPS


def softmax_prior(q: torch.Tensor, k: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Causal softmax attention read (SDPA, scale ``1/sqrt(d_k)``)."""
    return F.scaled_dot_product_attention(q, k, values, is_causal=True)


def linear_prior(q: torch.Tensor, k: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Causal linear attention read normalised by the running key sum (chunkwise form)."""
    return chunk_normalized_read(feature_map(q), feature_map(k), values)[0]


def gla_prior(log_decay: torch.Tensor, chunk_size: int = 64) -> Prior:
    """The GLA prior for one input: `log_decay` ``(batch, heads, time)``, entries <= 0."""

    def read(q: torch.Tensor, k: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        out, _ = chunk_normalized_read(
            feature_map(q), feature_map(k), values, log_decay, chunk_size=chunk_size
        )
        return out

    return read


def _normalise(out: torch.Tensor) -> torch.Tensor:
    """``numerator / key sum``: the last channel of a read of ``[v, 1]`` is the normaliser."""
    tiny = torch.finfo(out.dtype).tiny  # the key sum is > 0 (phi > 0); guard only against 0
    return out[..., :-1] / out[..., -1:].clamp_min(tiny)


def chunk_normalized_read(
    phi_q: torch.Tensor,
    phi_k: torch.Tensor,
    v: torch.Tensor,
    log_decay: torch.Tensor | None = None,
    *,
    chunk_size: int = 64,
    state: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Chunkwise-parallel normalised (gated) linear attention.

    Args:
        phi_q, phi_k: featurised queries and keys ``(B, H, T, d_k)``, entries > 0.
        v: values ``(B, H, T, d_v)``.
        log_decay: ``a_t <= 0`` ``(B, H, T)``; None for plain linear attention (``a = 0``).
        chunk_size: positions per chunk.
        state: the state after earlier positions ``(B, H, d_k, d_v + 1)`` (decoding); None
            starts empty.

    Returns:
        ``(read (B, H, T, d_v), state (B, H, d_k, d_v + 1))``.
    """
    check_linear_read(phi_q, phi_k, v, log_decay, state, chunk_size)
    B, H, T, dk = phi_q.shape
    dv = v.shape[-1]
    C = min(chunk_size, T)  # a short sequence is one chunk, without padding
    v1 = torch.cat([v, v.new_ones(B, H, T, 1)], dim=-1)
    g = log_decay if log_decay is not None else v.new_zeros(B, H, T)
    pad = (-T) % C
    if pad:  # zero padding at the end: only later (discarded) positions see it
        phi_q = F.pad(phi_q, (0, 0, 0, pad))
        phi_k = F.pad(phi_k, (0, 0, 0, pad))
        v1 = F.pad(v1, (0, 0, 0, pad))
        g = F.pad(g, (0, pad))
    n = (T + pad) // C
    q = phi_q.reshape(B, H, n, C, dk)
    k = phi_k.reshape(B, H, n, C, dk)
    vv = v1.reshape(B, H, n, C, dv + 1)
    b = g.reshape(B, H, n, C).cumsum(-1)  # b_t = sum_{s<=t in chunk} a_s
    causal = torch.ones(C, C, dtype=torch.bool, device=v.device).tril()
    diff = torch.where(causal, b[..., :, None] - b[..., None, :], 0.0)  # b_t - b_i <= 0
    scores = torch.where(causal, (q @ k.transpose(-1, -2)) * diff.exp(), 0.0)
    intra = scores @ vv  # (B, H, n, C, dv + 1)
    last = b[..., -1:]  # total log-decay of each chunk
    kv = (k * (last - b).exp()[..., None]).transpose(-1, -2) @ vv  # (B, H, n, dk, dv + 1)
    chunk_decay = last.exp()[..., None]  # (B, H, n, 1, 1)
    q_decayed = q * b.exp()[..., None]
    S = state if state is not None else v.new_zeros(B, H, dk, dv + 1)
    inter = []
    for c in range(n):
        inter.append(q_decayed[:, :, c] @ S)
        S = chunk_decay[:, :, c] * S + kv[:, :, c]
    out = intra + torch.stack(inter, dim=2)
    out = out.reshape(B, H, n * C, dv + 1)[:, :, :T]  # padded positions: k = 0, a = 0, S exact
    return _normalise(out), S


def recurrent_normalized_read(
    phi_q: torch.Tensor,
    phi_k: torch.Tensor,
    v: torch.Tensor,
    log_decay: torch.Tensor | None = None,
    *,
    state: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same read one step at a time (decoding): ``S_t = exp(a_t) S_{t-1} + phi(k_t)[v_t, 1]^T``,
    ``read_t = phi(q_t) S_t`` normalised by its last column. Constant memory per step.

    Arguments and returns as `chunk_normalized_read`.
    """
    check_linear_read(phi_q, phi_k, v, log_decay, state)
    B, H, T, dk = phi_q.shape
    dv = v.shape[-1]
    v1 = torch.cat([v, v.new_ones(B, H, T, 1)], dim=-1)
    S = state if state is not None else v.new_zeros(B, H, dk, dv + 1)
    outs = []
    for t in range(T):
        if log_decay is not None:
            S = log_decay[:, :, t, None, None].exp() * S
        S = S + phi_k[:, :, t, :, None] * v1[:, :, t, None, :]
        outs.append(phi_q[:, :, t, None, :] @ S)
    out = torch.cat(outs, dim=2)
    return _normalise(out), S
