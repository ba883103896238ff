"""Epidemiology: forecast an epidemic curve, accuracy vs interpretability.

Data: an SEIR epidemic (population 100,000, incubation 3 days, infectious 4 days, 5 exposed
and 5 infectious at day 0) whose transmission rate falls from 0.6 to 0.33 at day 30 (an
intervention), observed as Poisson daily incidence for 90 days. The first 45 days (up to about
the peak) are for fitting; models forecast days 45-89. Accuracy ``1 / (1 + RMSE / sd(test))``
on daily cases; interpretability by MOSE. Constant-rate SIR and SEIR are misspecified.

Frameworks: SIR, SEIR and SEIR with a change of transmission rate fitted by least squares on ``log(1 + cases)`` (start ``beta`` x robust
loss x fitting window), AR(p) on ``log(1 + cases)`` (order x ridge), and a polynomial trend in
time on ``log(1 + cases)`` (degree x ridge).
"""

from __future__ import annotations

import numpy as np

from mathmo.tasks._forecast import fit_ar, forecast_ar, ridge, rmse
from mathmo.tasks.base import Candidate, ForecastTask, Framework, ModelCard

POPULATION = 100_000.0


def compartments(
    beta: float,
    sigma: float | None,
    gamma: float,
    seed_cases: float,
    days: int,
    beta_after: float | None = None,
    change_day: float = 0.0,
) -> np.ndarray:
    """Daily incidence of an SIR (``sigma`` None) or SEIR model (forward Euler, 4 steps a day).

    With ``beta_after`` the transmission rate moves from ``beta`` to ``beta_after`` around
    ``change_day`` (a logistic step 2 days wide, smooth so that the day can be fitted).
    """
    beta_before = beta
    s, e, i = POPULATION - 2 * seed_cases, seed_cases, seed_cases
    if sigma is None:
        s, e, i = POPULATION - seed_cases, 0.0, seed_cases
    out = np.zeros(days)
    h = 0.25
    for d in range(days):
        new = 0.0
        for sub in range(4):
            if beta_after is not None:
                step = 1.0 / (1.0 + np.exp(-np.clip((d + sub * h - change_day) / 2.0, -50, 50)))
                beta = beta_before + (beta_after - beta_before) * step
            inf = beta * s * i / POPULATION
            if sigma is None:
                s, i = s - h * inf, i + h * (inf - gamma * i)
                new += h * inf
            else:
                onset = sigma * e
                s, e, i = s - h * inf, e + h * (inf - onset), i + h * (onset - gamma * i)
                new += h * onset
        out[d] = new
    return out


class EpidemiologyTask(ForecastTask):
    objectives = ("accuracy", "interpretability")
    subjective = True

    def __init__(self, seed: int = 0, n_train: int = 45, days: int = 90) -> None:
        self.name = "epidemiology"
        # imported here, not in the sandboxed child: each child is a fork and inherits it
        import scipy.optimize  # noqa: F401

        rng = np.random.default_rng(seed)
        self.clean = compartments(0.6, 1 / 3, 1 / 4, 5.0, days, beta_after=0.33, change_day=30)
        self.cases = rng.poisson(self.clean).astype(np.float64)
        self.n_train = n_train
        self.scale = float(self.cases[n_train:].std())
        ode_grid = {"beta0": (0.3, 0.6, 1.2), "loss": ("linear", "soft_l1"), "window": (0.5, 1.0)}
        self.frameworks = (
            Framework("sir", "SIR compartmental model fitted by least squares", ode_grid),
            Framework("seir", "SEIR compartmental model fitted by least squares", ode_grid),
            Framework(
                "seir_change", "SEIR with one change of transmission rate, least squares", ode_grid
            ),
            Framework(
                "autoregressive",
                "AR(p) on log(1 + cases)",
                {"p": (1, 2, 3, 5, 7, 10), "ridge": (0.0, 0.1, 10.0)},
            ),
            Framework(
                "polynomial",
                "polynomial trend in time on log(1 + cases)",
                {"degree": (1, 2, 3, 4, 5), "ridge": (0.0, 0.1, 10.0)},
            ),
        )

    def describe(self) -> str:
        return "Forecast daily epidemic cases (90 days, 45 for fitting); objectives: forecast RMSE and interpretability."

    def evaluate(self, candidate: Candidate) -> dict[str, float]:
        with np.errstate(all="ignore"):  # wild parameter trials overflow; least_squares copes
            return self._evaluate(candidate)

    def _evaluate(self, candidate: Candidate) -> dict[str, float]:
        f = candidate.framework
        n, days = self.n_train, len(self.cases)
        train, test = self.cases[:n], self.cases[n:]
        y = np.log1p(train)
        if f in ("sir", "seir", "seir_change"):
            from scipy.optimize import least_squares

            first = round(n * (1.0 - candidate.get("window")))
            b0 = candidate.get("beta0")
            # log-parameters: beta, gamma, seed cases (, sigma (, beta after, change day))
            extra = [b0, n / 2] if f == "seir_change" else []
            x0 = np.log([b0, 0.25, 5.0] + ([1 / 3] if f != "sir" else []) + extra)

            def curve(p: np.ndarray, horizon: int) -> np.ndarray:
                q = np.exp(np.clip(p, -10, 10))
                if f == "seir_change":
                    return compartments(
                        q[0], q[3], q[1], q[2], horizon, beta_after=q[4], change_day=q[5]
                    )
                return compartments(q[0], q[3] if f == "seir" else None, q[1], q[2], horizon)

            def resid(p: np.ndarray) -> np.ndarray:
                return np.log1p(curve(p, n))[first:] - y[first:]

            fit = least_squares(resid, x0, loss=candidate.get("loss"), max_nfev=100)
            pred = curve(fit.x, days)[n:]
            n_params = len(x0)
        elif f == "autoregressive":
            p, lam = candidate.get("p"), candidate.get("ridge")
            w = fit_ar(y[:, None], p, lam)
            pred = np.expm1(np.clip(forecast_ar(y[:, None], w, p, days - n)[:, 0], -50, 50))
            n_params = w.size
        elif f == "polynomial":
            deg, lam = candidate.get("degree"), candidate.get("ridge")
            tt = np.arange(days) / n
            x = np.stack([tt**k for k in range(deg + 1)], axis=1)
            w = ridge(x[:n], y, lam)
            pred = np.expm1(np.clip(x[n:] @ w, -50, 50))
            n_params = deg + 1
        else:
            raise ValueError(f"candidate: unknown epidemiology framework {f!r}")
        return {
            "rmse": rmse(pred, test),
            "n_params": float(n_params),
            "mechanistic": float(f in ("sir", "seir", "seir_change")),
        }

    def references(self) -> tuple[ModelCard, ...]:
        return (
            ModelCard("SIR model (transmission, recovery, initial cases)", 3, True),
            ModelCard("AR(3) on log cases", 4, False),
            ModelCard("cubic trend in log cases", 4, False),
        )
