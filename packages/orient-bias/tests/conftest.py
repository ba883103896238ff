from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from shared_core.data import Molecule
from shared_core.device import limit_threads

# shared-core's plugin (fixture `device`, markers `cuda` and `slow`): `pytest tests` works on an
# installed wheel too, with or without `-p shared_core.pytest_plugin`
pytest_plugins = ["shared_core.pytest_plugin"]


def asymmetric_molecule(seed: int = 0, n: int = 8) -> Molecule:
    """A random asymmetric molecule (distinct eigenvalues, no sign ties)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)) * np.array([2.0, 1.2, 0.6])
    return Molecule(rng.integers(1, 10, n), x, name=f"rand{seed}")


@pytest.fixture
def qm9_csv():
    """Path of qm9pack's first CSV part; skips when the qm9pack wheel is absent."""
    if importlib.util.find_spec("qm9pack") is None:
        pytest.skip("qm9pack (the real QM9 wheel, extra 'qm9') is not installed")
    from orient_bias.data import qm9_parts

    return qm9_parts()[0]


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    """The test models are tiny; one thread avoids oversubscribing shared CPUs."""
    with limit_threads(1):
        yield
