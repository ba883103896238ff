"""Shared fixtures: one thread, and molecules from the offline QM9 / ZINC wheels."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared_core.device import limit_threads

# shared-core's plugin (fixture `device`, markers `cuda` and `slow`): `pytest tests` works on an
# installed wheel too, with or without `-p shared_core.pytest_plugin`
pytest_plugins = ["shared_core.pytest_plugin"]


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> Iterator[None]:
    # the test models are tiny: one thread avoids oversubscribing the shared CPU cores
    with limit_threads(1):
        yield


@pytest.fixture(scope="session")
def qm9_zinc_smiles() -> list[str]:
    """500 QM9 + 500 ZINC SMILES (fixed slices)."""
    from shared_core.data import load

    qm9, _ = load("qm9-smiles")
    return list(qm9[::260][:500]) + list(load("zinc-smiles", limit=500))
