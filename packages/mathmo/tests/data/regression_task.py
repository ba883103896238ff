"""A tiny regression task for `mathmo solve`: predict y = sin(2 pi x) + noise on held-out x.

Objectives (both maximised, in [0, 1]): accuracy = 1 / (1 + RMSE / sd(test y)) and
simplicity = 1 / (1 + number of fitted parameters / 4).
"""

import numpy as np
from mathmo import Candidate, Framework

name = "tiny-regression"
objectives = ("accuracy", "simplicity")
frameworks = (
    Framework("polynomial", "least-squares polynomial in x", {"degree": (0, 1, 2, 3, 5, 7, 9)}),
    Framework("knn", "mean of the k nearest training points", {"k": (1, 2, 4, 8, 16)}),
    Framework("bins", "piecewise constant on equal-width bins", {"bins": (1, 2, 4, 8, 16)}),
)

_rng = np.random.default_rng(0)
_x = _rng.uniform(0.0, 1.0, 60)
_y = np.sin(2 * np.pi * _x) + 0.2 * _rng.standard_normal(60)
x_train, y_train, x_test, y_test = _x[:40], _y[:40], _x[40:], _y[40:]


def evaluate(candidate: Candidate) -> dict[str, float]:
    """Fit one model on the training points; its test RMSE and parameter count."""
    if candidate.framework == "polynomial":
        degree = candidate.get("degree")
        coef = np.polyfit(x_train, y_train, degree)
        pred, n_params = np.polyval(coef, x_test), degree + 1
    elif candidate.framework == "knn":
        k = candidate.get("k")
        nearest = np.argsort(np.abs(x_test[:, None] - x_train[None, :]), axis=1)[:, :k]
        pred, n_params = y_train[nearest].mean(axis=1), len(x_train) // k
    else:
        bins = candidate.get("bins")
        edges = np.minimum((x_train * bins).astype(int), bins - 1)
        means = np.array(
            [y_train[edges == b].mean() if np.any(edges == b) else 0.0 for b in range(bins)]
        )
        pred, n_params = means[np.minimum((x_test * bins).astype(int), bins - 1)], bins
    rmse = float(np.sqrt(np.mean((pred - y_test) ** 2)))
    return {"rmse": rmse, "n_params": float(n_params)}


def normalise(raw: dict[str, float]) -> list[float]:
    """Raw measurements -> (accuracy, simplicity), higher is better."""
    return [1.0 / (1.0 + raw["rmse"] / float(np.std(y_test))), 1.0 / (1.0 + raw["n_params"] / 4.0)]
