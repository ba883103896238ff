r"""Slow, exact references: the oracles of the tests.

Each prior is written out as its dense matrix $P_t(i)$ ``(B, H, T, T)`` (rows sum to 1 over
$i \le t$, zeros above the diagonal), straight from its definition; the free-energy read is
the free-energy (log-sum-exp) read by definition, evaluated per position with no clipping, no shift trick and no
shared prior call; the TDC scan and the linear-attention recurrence are plain loops.
Compute them in float64.
"""

from __future__ import annotations

import math

import torch

from free_energy_mixer.priors import feature_map


def _causal(T: int, device: torch.device) -> torch.Tensor:
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def softmax_prior_matrix(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``P_t(i) = exp(q_t.k_i / sqrt(d)) / sum_{j<=t} exp(q_t.k_j / sqrt(d))``, ``i <= t``."""
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    s = s.masked_fill(~_causal(q.shape[2], q.device), -math.inf)
    return torch.softmax(s, dim=-1)


def linear_prior_matrix(
    q: torch.Tensor, k: torch.Tensor, log_decay: torch.Tensor | None = None
) -> torch.Tensor:
    """``P_t(i) ~ exp(c_t - c_i) phi(q_t).phi(k_i)`` over ``i <= t`` (``c = cumsum a``; a = 0 if None)."""
    w = feature_map(q) @ feature_map(k).transpose(-1, -2)
    if log_decay is not None:
        c = log_decay.cumsum(-1)
        w = w * torch.exp((c[..., :, None] - c[..., None, :]).clamp_max(0.0))
    w = w.masked_fill(~_causal(q.shape[2], q.device), 0.0)
    return w / w.sum(-1, keepdim=True)


def mean_read(P: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``mu_t = sum_i P_t(i) v_i``."""
    return P @ v


def free_energy_reference(P: torch.Tensor, v: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """The free-energy read by definition: ``F_tj = logsumexp_{i: P_t(i) > 0}(log P_t(i) + beta_j v_ij) / beta_j``.

    `P` ``(B, H, T, T)``, `v` ``(B, H, T, d_v)``, `beta` ``(H, d_v)``.
    """
    b = beta[None, :, None, :]  # (1, H, 1, dv)
    logp = torch.log(P)[..., None]  # (B, H, T, T, 1); -inf outside the support
    return torch.logsumexp(logp + (b * v)[:, :, None, :, :], dim=3) / b


def gibbs_value(P: torch.Tensor, v: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """``E_q[v] - KL(q || P) / beta`` at the Gibbs re-weighting ``q ~ P exp(beta v)``: equals F."""
    b = beta[None, :, None, :]
    logw = torch.log(P)[..., None] + (b * v)[:, :, None, :, :]  # (B, H, T, T, dv)
    logq = logw - torch.logsumexp(logw, dim=3, keepdim=True)
    qd = logq.exp()
    logp = torch.log(P)[..., None].expand_as(logq)
    kl = torch.where(qd > 0, qd * (logq - logp), 0.0).sum(3)
    return (qd * v[:, :, None, :, :]).sum(3) - kl / b


def decay_scan_loop(log_decay: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """``h_t = exp(a_t) h_{t-1} + u_t`` one position at a time (``(B, T, N)`` in and out)."""
    h = torch.zeros_like(u[:, 0])
    out = []
    for t in range(u.shape[1]):
        h = log_decay[:, t].exp() * h + u[:, t]
        out.append(h)
    return torch.stack(out, dim=1)


def decay_scan_public(log_decay: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The public code's closed form ``D * cumsum(u / D)``, ``D = exp(cumsum a)``: overflows."""
    D = torch.exp(log_decay.cumsum(1))
    return (u / (D + 1e-12)).cumsum(1) * D
