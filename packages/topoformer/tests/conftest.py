"""Shared fixtures of the topoformer tests (helpers are fixtures, not imports)."""

from __future__ import annotations

import os

import numpy as np
import pytest

# shared-core's plugin (fixture `device`, markers `cuda` and `slow`): `pytest tests` works on an
# installed wheel too, with or without `-p shared_core.pytest_plugin`
pytest_plugins = ["shared_core.pytest_plugin"]


@pytest.fixture(scope="session")
def mutag():
    """MUTAG as (graphs, labels 0/1) from grakel's wheel."""
    from topoformer.data import load_tu_graphs

    return load_tu_graphs()


@pytest.fixture(scope="session")
def data_dir() -> str:
    return os.path.join(os.path.dirname(__file__), "data")


@pytest.fixture
def random_graphs():
    """Twenty seeded Erdos-Renyi graphs (some with triangles, some disconnected)."""
    import networkx as nx

    rng = np.random.default_rng(0)
    return [
        nx.gnp_random_graph(int(rng.integers(1, 16)), float(rng.uniform(0.1, 0.6)), seed=s)
        for s in range(20)
    ]
