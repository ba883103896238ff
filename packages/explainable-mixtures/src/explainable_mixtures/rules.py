"""Differentiable box rules (Sec. 4 of the paper): soft conditions, their soft AND, rule weights.

A rule ``i`` is a conjunction of interval conditions ``alpha_ij <= x_j <= beta_ij`` over the
descriptive features. Its soft version (temperature ``tau``) is

    pi_tau(x_j; alpha_j, beta_j) = sigma((x_j - alpha_j) / tau) * sigma((beta_j - x_j) / tau)
    e(x) = sum_j a_j / sum_j a_j pi_tau(x_j)^{-1}                (weighted harmonic mean)

with feature weights ``a_j >= 0`` (``a_j = 0`` drops feature ``j``). As ``tau -> 0``, ``pi``
becomes the indicator of the interval and ``e`` the AND of the indicators: the harmonic mean
is 0 as soon as one weighted condition is 0 and 1 when all hold. The conditional mixture
weights of the explainable mixture model are ``w_i(x) = e_i(x) / sum_l e_l(x)``.

Everything is computed in log space (``log e_i`` via one ``logsumexp``), so that points far
outside every box keep finite, well-defined weights at any temperature.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def log_soft_condition(
    x: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor, tau: float
) -> torch.Tensor:
    """``log pi_tau(x_j; alpha_ij, beta_ij)`` for every point, rule and feature.

    Args:
        x: ``(n, d)`` features (in the units of the thresholds).
        alpha: ``(k, d)`` lower thresholds; beta: ``(k, d)`` upper thresholds.
        tau: temperature > 0, in the same units.

    Returns:
        ``(n, k, d)``.
    """
    z = x[:, None, :]
    return F.logsigmoid((z - alpha) / tau) + F.logsigmoid((beta - z) / tau)


def log_rule_activation(log_pi: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """``log e_i(x)`` from the ``(n, k, d)`` log conditions and ``(k, d)`` weights ``a >= 0``.

    ``log e = log sum_j a_j - logsumexp_j(log a_j - log pi_j)``; a zero weight gives
    ``log a_j = -inf`` and drops the feature exactly. Returns ``(n, k)``.
    """
    return torch.log(a.sum(-1)) - torch.logsumexp(torch.log(a) - log_pi, dim=-1)


def log_conditional_weights(log_e: torch.Tensor) -> torch.Tensor:
    """``log w_i(x) = log e_i(x) - log sum_l e_l(x)`` (the conditional EMM), ``(n, k)``."""
    return log_e - torch.logsumexp(log_e, dim=-1, keepdim=True)


def marginal_weights(log_e: torch.Tensor) -> torch.Tensor:
    """``w_i = E[e_i(X)] / sum_l E[e_l(X)]`` over the rows of ``(n, k)`` ``log_e`` (marginal EMM)."""
    mean_e = torch.logsumexp(log_e, dim=0)  # log of n * E[e_i]; the n cancels
    return torch.softmax(mean_e, dim=0)


def coverage_penalty(log_e: torch.Tensor) -> torch.Tensor:
    """``C = -mean_x log min(1, sum_i e_i(x))``: 0 iff every point satisfies some rule.

    Not in the paper's objective as we could read it; see "Differences from the paper". Without
    it the boxes may drift off their rows: the weights ``w_i`` only compare the rules, so a
    box that no longer contains its rows keeps them as long as every other box is further
    away, and the printed rule would not describe the rows it explains.
    """
    return -torch.clamp(torch.logsumexp(log_e, dim=-1), max=0.0).mean()


def overlap_penalty(log_w: torch.Tensor) -> torch.Tensor:
    """``R = mean_x (1 - sum_i w_i(x)^2)``: 0 iff every point has one-hot weights."""
    return (1.0 - torch.exp(2.0 * log_w).sum(-1)).mean()
