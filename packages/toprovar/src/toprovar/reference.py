"""Slow, exact, readable forms of ToProVAR's quantities: the oracles of the tests.

- `attention_entropy`: materialise the softmax attention matrix, then Eq. (attention entropy)
  ``H_i = -sum_j a_ij log a_ij`` and the output ``o_i = sum_j a_ij v_j`` (float64 advised).
- `scale_sparsity`: ``rho_s`` = share of a scale's tokens whose entropy is below that scale's
  mean, by an explicit loop.
- `layer_score`: ``R = exp(-beta (sigma_1 / sigma_2 - 1))`` of one entropy map, by numpy's SVD.
- `keep_probability`: ``P_keep`` token by token from the paper's piecewise rule.
"""

from __future__ import annotations

import math

import numpy as np
import torch


def attention_entropy(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax attention and the entropy of every query's attention row, the naive way.

    Args:
        q: ``(batch, heads, n_q, dim)``; k, v: ``(batch, heads, n_k, dim)``.
        mask: optional boolean ``(n_q, n_k)`` (or broadcastable to ``(batch, heads, n_q,
            n_k)``), True where query i may attend key j. Every row needs one True.

    Returns:
        ``(out (batch, heads, n_q, dim), H (batch, heads, n_q))`` in nats; scores are scaled
        by ``1 / sqrt(dim)``.
    """
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    a = torch.softmax(s, dim=-1)
    # 0 log 0 = 0: masked (a = 0) entries contribute nothing
    plogp = torch.where(a > 0, a * torch.log(a), torch.zeros_like(a))
    return a @ v, -plogp.sum(-1)


def scale_sparsity(entropy: np.ndarray) -> float:
    """``rho_s``: the share of tokens with entropy strictly below the mean of `entropy` (1-D)."""
    values = [float(h) for h in np.asarray(entropy, dtype=np.float64).ravel()]
    mean = sum(values) / len(values)
    return sum(1 for h in values if h < mean) / len(values)


def layer_score(entropy_map: np.ndarray, beta: float, eps: float = 1e-12) -> float:
    """``R = exp(-beta (varrho - 1))`` with ``varrho = sigma_1 / sigma_2`` of a 2-D entropy map."""
    sigma = np.linalg.svd(np.asarray(entropy_map, dtype=np.float64), compute_uv=False)
    varrho = sigma[0] / max(sigma[1], eps * max(sigma[0], eps))
    return math.exp(-beta * (varrho - 1.0))


def keep_probability(
    entropy_hat: np.ndarray,
    scale: int,
    n_scales: int,
    start: int,
    score: float,
    a_min: float,
    a_max: float,
) -> np.ndarray:
    """``P_keep`` of each token: 1 before the pruning depth D, else ``1 - clip(a_min + (a_max - a_min) q)``.

    ``q_i = phi(s) R Hhat_i`` with ``phi(s) = s / S_max``; `scale` is 1-based (s = 1 is the
    1x1 map), `start` is D (1-based).
    """
    out = np.ones(len(entropy_hat))
    if scale < start:
        return out
    phi = scale / n_scales
    for i, h in enumerate(np.asarray(entropy_hat, dtype=np.float64)):
        q = phi * score * h
        out[i] = 1.0 - min(1.0, max(0.0, a_min + (a_max - a_min) * q))
    return out
