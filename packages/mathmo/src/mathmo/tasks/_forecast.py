"""Shared pieces of the two forecasting tasks: ridge autoregression, polynomial features, and
iterated one-step forecasts."""

from __future__ import annotations

import itertools

import numpy as np


def ridge(x: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """Least squares with an L2 penalty ``lam`` on all but the first (intercept) column."""
    reg = lam * np.eye(x.shape[1])
    reg[0, 0] = 0.0
    return np.linalg.solve(x.T @ x + reg + 1e-10 * np.eye(x.shape[1]), x.T @ y)


def poly_features(z: np.ndarray, degree: int) -> np.ndarray:
    """All monomials of the columns of ``z`` up to ``degree`` (first column the constant 1)."""
    cols = [np.ones(len(z))]
    for d in range(1, degree + 1):
        for combo in itertools.combinations_with_replacement(range(z.shape[1]), d):
            cols.append(np.prod(z[:, list(combo)], axis=1))
    return np.stack(cols, axis=1)


def fit_ar(series: np.ndarray, p: int, lam: float) -> np.ndarray:
    """Vector AR(p) with intercept: ``z_t = c + sum_i A_i z_{t-i}``; returns the weight matrix."""
    t, _k = series.shape
    if t <= p + 1:
        raise ValueError(f"p: AR order {p} needs more than {p + 1} training points, got {t}")
    x = np.hstack([np.ones((t - p, 1))] + [series[p - i - 1 : t - i - 1] for i in range(p)])
    return ridge(x, series[p:], lam)


def forecast_ar(series: np.ndarray, w: np.ndarray, p: int, steps: int) -> np.ndarray:
    hist = list(series[-p:])
    out = []
    for _ in range(steps):
        x = np.concatenate([[1.0], *[hist[-i - 1] for i in range(p)]])
        nxt = x @ w
        out.append(nxt)
        hist.append(nxt)
    return np.array(out)


def fit_poly_map(series: np.ndarray, degree: int, lam: float) -> np.ndarray:
    """``z_{t+1} - z_t = P(z_t)`` with a polynomial ``P`` of ``degree``."""
    return ridge(poly_features(series[:-1], degree), np.diff(series, axis=0), lam)


def forecast_map(last: np.ndarray, step: object, steps: int, bound: float = 50.0) -> np.ndarray:
    """Iterate ``z <- z + step(z)``; a trajectory leaving ``|z| <= bound`` is cut to inf (failure)."""
    z, out = np.asarray(last, dtype=np.float64), []
    for _ in range(steps):
        z = z + np.asarray(step(z[None]))[0]  # type: ignore[operator]
        if not np.all(np.abs(z) <= bound):
            z = np.full_like(z, np.inf)
        out.append(z)
    return np.array(out)


def rmse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(a) - np.asarray(b)) ** 2)))
