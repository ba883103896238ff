"""The slow, obviously correct fitter: Epoch AI's procedure, one scipy call per start.

For every start of the initialisation grid, ``scipy.optimize.minimize(method="L-BFGS-B")`` on
``sum_i Huber_delta(log L_hat_i - log L_i)``; the lowest objective among the successful runs
is kept (Hoffmann et al. 2022, Approach 3; Besiroglu et al. 2024). `quality_scaling.fit.fit_law`
must reach the same minimum; the tests and the benchmark compare the two.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize

from quality_scaling.fit import DELTA, FitResult, init_grid
from quality_scaling.laws import ScalingData, ScalingLaw, get_law

__all__ = ["fit_law_reference", "log_predict_reference", "objective_reference"]


def log_predict_reference(theta: np.ndarray, law: ScalingLaw, data: ScalingData) -> np.ndarray:
    """log L_hat row by row: log(exp(a - alpha log N) + exp(b - beta log D - gamma log Q) + exp(e)),
    each term present when the law has its coefficient (a, b, e), each exponent when it has it."""
    t = dict(zip(law.theta_names, np.asarray(theta, dtype=float), strict=True))
    out = np.empty(len(data))
    for i in range(len(data)):
        terms = []
        if "a" in t:
            terms.append(t["a"] - t["alpha"] * math.log(data.N[i]))
        if "b" in t:
            terms.append(
                t["b"] - t["beta"] * math.log(data.D[i]) - t.get("gamma", 0.0) * math.log(data.Q[i])
            )
        terms.append(t["e"])
        m = max(terms)
        out[i] = m + math.log(sum(math.exp(t - m) for t in terms))
    return out


def objective_reference(
    theta: np.ndarray, law: ScalingLaw, data: ScalingData, delta: float = DELTA
) -> float:
    """sum_i Huber_delta(r_i), r_i = log L_hat_i - log L_i."""
    r = log_predict_reference(np.asarray(theta, dtype=float), law, data) - np.log(data.loss)
    return float(sum(0.5 * x * x if abs(x) <= delta else delta * (abs(x) - 0.5 * delta) for x in r))


def fit_law_reference(
    data: ScalingData,
    law: str | ScalingLaw = "quality",
    grid: np.ndarray | None = None,
    delta: float = DELTA,
) -> FitResult:
    """Loop over the grid: one L-BFGS-B run per start (exact gradient), keep the best success."""
    from quality_scaling.fit import objective_and_grad

    law = get_law(law)
    grid = init_grid(law) if grid is None else np.asarray(grid, dtype=float)
    best_theta, best_f = None, math.inf
    for theta0 in grid:
        res = minimize(
            objective_and_grad,
            theta0,
            args=(law, data, delta, None),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 5000, "ftol": 1e-15, "gtol": 1e-12},
        )
        if res.success and res.fun < best_f:
            best_theta, best_f = np.asarray(res.x), float(res.fun)
    if best_theta is None:
        raise RuntimeError("fit_law_reference: no start converged")
    return FitResult(law, best_theta, best_f, len(data), delta)
