"""Slow, exact oracle of the explainable mixture model: plain loops in float64, no torch.

Written straight from the definitions (Sec. 3-4 of the paper), one point, rule and feature at a
time, for the tests of the vectorised torch form (`explainable_mixtures.model`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def _sigmoid(t: float) -> float:
    if t >= 0:
        return 1.0 / (1.0 + math.exp(-t))
    e = math.exp(t)
    return e / (1.0 + e)


def soft_condition(x_j: float, alpha_j: float, beta_j: float, tau: float) -> float:
    """``pi_tau(x_j) = sigma((x_j - alpha_j) / tau) sigma((beta_j - x_j) / tau)``."""
    return _sigmoid((x_j - alpha_j) / tau) * _sigmoid((beta_j - x_j) / tau)


def rule_activation(
    x: Sequence[float],
    alpha: Sequence[float],
    beta: Sequence[float],
    a: Sequence[float],
    tau: float,
) -> float:
    """``e(x) = sum_j a_j / sum_j a_j / pi_tau(x_j)`` (features with ``a_j = 0`` skipped)."""
    num = sum(a)
    den = 0.0
    for x_j, al, be, a_j in zip(x, alpha, beta, a, strict=True):
        if a_j > 0:
            den += a_j / soft_condition(x_j, al, be, tau)
    return num / den


def gaussian_log_pdf(y: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> float:
    """``log N(y; mean, cov)`` by the textbook formula."""
    d = len(y)
    diff = y - mean
    sign, logdet = np.linalg.slogdet(cov)
    if sign <= 0:
        raise ValueError("cov: expected a positive definite matrix")
    quad = float(diff @ np.linalg.solve(cov, diff))
    return -0.5 * (quad + logdet + d * math.log(2 * math.pi))


def component_log_pdf(
    y: np.ndarray, weights: np.ndarray, means: np.ndarray, covs: np.ndarray
) -> float:
    """``log sum_s rho_s N(y; mu_s, Sigma_s)`` for one rule's Gaussian mixture."""
    terms = [
        math.log(w) + gaussian_log_pdf(y, m, c)
        for w, m, c in zip(weights, means, covs, strict=True)
    ]
    top = max(terms)
    return top + math.log(sum(math.exp(t - top) for t in terms))


def conditional_log_density(
    x: np.ndarray,
    y: np.ndarray,
    alpha: np.ndarray,
    beta: np.ndarray,
    a: np.ndarray,
    tau: float,
    weights: np.ndarray,
    means: np.ndarray,
    covs: np.ndarray,
) -> np.ndarray:
    """``log p(y_n | x_n) = log sum_i w_i(x_n) p_i(y_n)`` for every row.

    Args:
        x: ``(n, d)``; y: ``(n, d_y)``; alpha, beta, a: ``(k, d)``; weights: ``(k, S)``;
        means: ``(k, S, d_y)``; covs: ``(k, S, d_y, d_y)``; thresholds in the units of x.
    """
    out = np.empty(len(x))
    for n, (x_n, y_n) in enumerate(zip(x, y, strict=True)):
        e = [rule_activation(x_n, alpha[i], beta[i], a[i], tau) for i in range(len(alpha))]
        total = sum(e)
        p = sum(
            e_i / total * math.exp(component_log_pdf(y_n, weights[i], means[i], covs[i]))
            for i, e_i in enumerate(e)
        )
        out[n] = math.log(p)
    return out


def partition_log_density(
    x: np.ndarray,
    y: np.ndarray,
    boxes: Sequence[Sequence[tuple[float, float]]],
    means: np.ndarray,
    covs: np.ndarray,
) -> np.ndarray:
    """Hard rules: ``log p(y | x) = log p_i(y)`` for the one box ``i`` containing ``x``.

    ``boxes[i][j] = (low, high)``; the boxes must partition the rows of ``x`` (each row in
    exactly one box), else ValueError. Components are single Gaussians ``(k, d_y)``,
    ``(k, d_y, d_y)``. This is the exactness theorem's right-hand side.
    """
    out = np.empty(len(x))
    for n, (x_n, y_n) in enumerate(zip(x, y, strict=True)):
        inside = [
            i
            for i, box in enumerate(boxes)
            if all(lo <= v <= hi for v, (lo, hi) in zip(x_n, box, strict=True))
        ]
        if len(inside) != 1:
            raise ValueError(f"boxes: row {n} lies in {len(inside)} boxes, expected exactly one")
        i = inside[0]
        out[n] = gaussian_log_pdf(y_n, means[i], covs[i])
    return out


def induced_gaussian(
    X: np.ndarray,
    U: np.ndarray,
    alpha: Sequence[float],
    beta: Sequence[float],
    a: Sequence[float],
    tau: float,
    prior_rows: float,
    floor: float,
) -> tuple[np.ndarray, np.ndarray]:
    """One rule's Gaussian induced by the rows it covers: weights ``e(x_l)``, plus `prior_rows`
    pseudo-rows at 0 with unit covariance and a diagonal `floor` (standard units).

    Returns the mean ``(d_y,)`` and covariance ``(d_y, d_y)``.
    """
    d_y = U.shape[1]
    mass, first = prior_rows, np.zeros(d_y)
    weights = []
    for x, u in zip(X, U, strict=True):
        e = rule_activation(list(x), alpha, beta, a, tau)
        weights.append(e)
        mass += e
        first += e * u
    mean = first / mass
    scatter = prior_rows * (np.eye(d_y) + np.outer(mean, mean))
    for e, u in zip(weights, U, strict=True):
        scatter += e * np.outer(u - mean, u - mean)
    return mean, scatter / mass + floor * np.eye(d_y)
