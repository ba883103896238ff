"""Shared fixtures: synthetic rows drawn from a known law."""

from __future__ import annotations

import numpy as np
import pytest
from quality_scaling.fit import init_grid
from quality_scaling.laws import QUALITY, ScalingData, ScalingLaw

# shared-core's plugin (fixture `device`, markers `cuda` and `slow`): `pytest tests` works on an
# installed wheel too, with or without `-p shared_core.pytest_plugin`
pytest_plugins = ["shared_core.pytest_plugin"]

TRUE = {"A": 400.0, "B": 1500.0, "E": 1.8, "alpha": 0.34, "beta": 0.30, "gamma": 0.5}


def synthetic(
    law: ScalingLaw = QUALITY, n: int = 200, noise: float = 0.005, seed: int = 0, params=None
) -> ScalingData:
    """Rows on a log grid of N, D and Q in [0.3, 1], loss from `params` with lognormal noise."""
    rng = np.random.default_rng(seed)
    p = dict(TRUE if params is None else params)
    N = np.exp(rng.uniform(np.log(1e6), np.log(1e10), n))
    D = np.exp(rng.uniform(np.log(1e8), np.log(1e12), n))
    Q = rng.uniform(0.3, 1.0, n) if law.uses_quality else np.ones(n)
    clean = ScalingData(N, D, np.ones(n), Q)
    loss = law.predict(law.theta(p), clean) * np.exp(noise * rng.standard_normal(n))
    return ScalingData(N, D, loss, Q)


def small_grid(law: ScalingLaw) -> np.ndarray:
    """A 3-per-axis sub-grid of Epoch's (243 or 729 starts): fast enough for unit tests."""
    return init_grid(
        law,
        a=(0, 10, 20),
        b=(0, 10, 20),
        e=(-1, 0, 1),
        alpha=(0, 1, 2),
        beta=(0, 1, 2),
        gamma=(0, 1, 2),
    )


@pytest.fixture
def rows() -> ScalingData:
    return synthetic()
