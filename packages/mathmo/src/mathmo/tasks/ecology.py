"""Ecology: forecast a predator-prey system, accuracy vs interpretability.

Data: the Rosenzweig-MacArthur system (logistic prey, saturating Holling type II predation)
``dx/dt = r x (1 - x/K) - a x y / (1 + a h x)``, ``dy/dt = e a x y / (1 + a h x) - m y`` with
``(r, K, a, h, e, m) = (1, 80, 0.1, 0.5, 0.5, 0.4)`` (a stable limit cycle), ``(x0, y0) = (20, 5)``,
observed every 0.25 time units on ``[0, 30]`` with 5 % log-normal noise; so the classic
Lotka-Volterra model is misspecified and accuracy and simplicity conflict. The first 80 observations are for fitting; the
model forecasts the last 41 from the end of the training window (ODE models integrate their
fitted trajectory). Accuracy ``1 / (1 + RMSE / sd(test))``; interpretability by MOSE.

Frameworks: the Lotka-Volterra ODE and the Rosenzweig-MacArthur ODE fitted by least squares on
log counts (start scale x robust loss), a vector AR(p) on log counts (order x ridge), a polynomial map of the log state (degree x
ridge), and symbolic regression of the log-state increments with gplearn (generations x
parsimony).
"""

from __future__ import annotations

from math import comb

import numpy as np

from mathmo.tasks._forecast import (
    fit_ar,
    fit_poly_map,
    forecast_ar,
    forecast_map,
    poly_features,
    rmse,
)
from mathmo.tasks.base import Candidate, ForecastTask, Framework, ModelCard

TRUE = (1.0, 80.0, 0.1, 0.5, 0.5, 0.4)  # r, K, a, h, e, m


def lotka_volterra(theta: np.ndarray, z0: np.ndarray, t: np.ndarray) -> np.ndarray:
    from scipy.integrate import odeint

    a, b, c, e = theta

    def rhs(z: np.ndarray, _: float) -> list[float]:
        x, y = z
        return [a * x - b * x * y, c * x * y - e * y]

    return np.asarray(odeint(rhs, z0, t, rtol=1e-7, atol=1e-9, mxstep=5000))


def rosenzweig_macarthur(theta: np.ndarray, z0: np.ndarray, t: np.ndarray) -> np.ndarray:
    from scipy.integrate import odeint

    r, k, a, h, e, m = theta

    def rhs(z: np.ndarray, _: float) -> list[float]:
        x, y = z
        eaten = a * x * y / (1.0 + a * h * x)
        return [r * x * (1.0 - x / k) - eaten, e * eaten - m * y]

    return np.asarray(odeint(rhs, z0, t, rtol=1e-7, atol=1e-9, mxstep=5000))


class EcologyTask(ForecastTask):
    objectives = ("accuracy", "interpretability")
    subjective = True

    def __init__(self, seed: int = 0, n_train: int = 80, symbolic: bool = True) -> None:
        self.name = "ecology"
        # imported here, not in the sandboxed child: each child is a fork and inherits them
        import scipy.integrate
        import scipy.optimize  # noqa: F401

        if symbolic:
            import gplearn.genetic  # noqa: F401
        rng = np.random.default_rng(seed)
        self.t = np.arange(121) * 0.25
        clean = rosenzweig_macarthur(np.array(TRUE), np.array([20.0, 5.0]), self.t)
        self.obs = clean * np.exp(0.05 * rng.standard_normal(clean.shape))
        self.n_train = n_train
        self.scale = float(self.obs[n_train:].std())
        fws = [
            Framework(
                "lotka_volterra",
                "Lotka-Volterra ODE fitted by least squares",
                {"init_scale": (0.5, 1.0, 2.0), "loss": ("linear", "soft_l1", "cauchy")},
            ),
            Framework(
                "rosenzweig_macarthur",
                "Rosenzweig-MacArthur ODE (logistic prey, Holling II) fitted by least squares",
                {"init_scale": (0.5, 1.0, 2.0), "loss": ("linear", "soft_l1", "cauchy")},
            ),
            Framework(
                "autoregressive",
                "vector AR(p) on log counts",
                {"p": (1, 2, 3, 4, 6, 8), "ridge": (0.0, 0.1, 10.0)},
            ),
            Framework(
                "polynomial",
                "polynomial map of the log state",
                {"degree": (1, 2, 3, 4), "ridge": (0.0, 0.1, 10.0)},
            ),
        ]
        if symbolic:
            fws.append(
                Framework(
                    "symbolic",
                    "gplearn symbolic regression of log-state increments",
                    {"generations": (5, 15), "parsimony": (0.001, 0.01, 0.05)},
                )
            )
        self.frameworks = tuple(fws)

    def describe(self) -> str:
        return "Forecast prey and predator counts (121 noisy observations, 80 for fitting); objectives: forecast RMSE and interpretability."

    def evaluate(self, candidate: Candidate) -> dict[str, float]:
        with np.errstate(all="ignore"):  # wild parameter trials overflow; least_squares copes
            return self._evaluate(candidate)

    def _evaluate(self, candidate: Candidate) -> dict[str, float]:
        f = candidate.framework
        train, test = self.obs[: self.n_train], self.obs[self.n_train :]
        logs = np.log(train)
        steps = len(test)
        if f == "lotka_volterra":
            from scipy.optimize import least_squares

            s = candidate.get("init_scale")
            x0 = np.log(np.array([1.0 * s, 0.1 * s, 0.1 * s, 1.0 * s, train[0, 0], train[0, 1]]))

            def resid(p: np.ndarray) -> np.ndarray:
                traj = lotka_volterra(np.exp(p[:4]), np.exp(p[4:]), self.t[: self.n_train])
                return (np.log(np.clip(traj, 1e-8, None)) - logs).ravel()

            fit = least_squares(resid, x0, loss=candidate.get("loss"), max_nfev=200)
            pred = lotka_volterra(np.exp(fit.x[:4]), np.exp(fit.x[4:]), self.t)[self.n_train :]
            n_params = 6
        elif f == "rosenzweig_macarthur":
            from scipy.optimize import least_squares

            s = candidate.get("init_scale")
            guess = [1.0, 50.0 * s, 0.05 * s, 1.0 / s, 0.5, 0.5]
            x0 = np.log(np.array([*guess, train[0, 0], train[0, 1]]))

            def resid_rm(p: np.ndarray) -> np.ndarray:
                q = np.exp(np.clip(p, -20, 20))
                traj = rosenzweig_macarthur(q[:6], q[6:], self.t[: self.n_train])
                return (np.log(np.clip(traj, 1e-8, None)) - logs).ravel()

            fit = least_squares(resid_rm, x0, loss=candidate.get("loss"), max_nfev=200)
            q = np.exp(np.clip(fit.x, -20, 20))
            pred = rosenzweig_macarthur(q[:6], q[6:], self.t)[self.n_train :]
            n_params = 8
        elif f == "autoregressive":
            p, lam = candidate.get("p"), candidate.get("ridge")
            w = fit_ar(logs, p, lam)
            pred = np.exp(np.clip(forecast_ar(logs, w, p, steps), -50, 50))
            n_params = w.size
        elif f == "polynomial":
            deg, lam = candidate.get("degree"), candidate.get("ridge")
            w = fit_poly_map(logs, deg, lam)
            pred = np.exp(forecast_map(logs[-1], lambda z: poly_features(z, deg) @ w, steps))
            n_params = 2 * comb(deg + 2, 2)
        elif f == "symbolic":
            from gplearn.genetic import SymbolicRegressor

            models = []
            for k in range(2):
                sr = SymbolicRegressor(
                    population_size=200,
                    generations=candidate.get("generations"),
                    parsimony_coefficient=candidate.get("parsimony"),
                    function_set=("add", "sub", "mul"),
                    random_state=k,
                    n_jobs=1,
                )
                sr.fit(logs[:-1], np.diff(logs[:, k]))
                models.append(sr)
            pred = np.exp(
                forecast_map(
                    logs[-1], lambda z: np.array([[m.predict(z)[0] for m in models]]), steps
                )
            )
            n_params = sum(len(m._program.program) for m in models)
        else:
            raise ValueError(f"candidate: unknown ecology framework {f!r}")
        return {
            "rmse": rmse(pred, test),
            "n_params": float(n_params),
            "mechanistic": float(f in ("lotka_volterra", "rosenzweig_macarthur")),
        }

    def references(self) -> tuple[ModelCard, ...]:
        return (
            ModelCard("Lotka-Volterra ODE (4 rates, 2 initial counts)", 6, True),
            ModelCard("vector AR(2) on log counts", 10, False),
            ModelCard("quadratic map of the log state", 12, False),
        )
