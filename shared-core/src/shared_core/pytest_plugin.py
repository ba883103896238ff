"""pytest plugin shared by every package's tests: ``pytest -p shared_core.pytest_plugin``.

The workspace's pytest configuration (root ``pyproject.toml``) loads it; it is not an entry
point, so installing a method package never puts it into someone else's pytest runs.

- markers ``cuda`` (skipped, with the reason, where no GPU is present) and ``slow``;
- fixture ``device``: ``"cpu"``, or ``"cuda"`` in the nox ``cuda`` sessions (``$SHARED_CORE_DEVICE``);
- fixture ``shared_data``: the ``../shared/data`` folder beside the checkout (skips if absent).

It imports torch only when a ``cuda`` test is collected.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared_core.device import DEVICE_ENV


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cuda: needs a CUDA GPU (skipped without one)")
    config.addinivalue_line("markers", "slow: long-running; deselected unless -m slow")


def _cuda_available() -> tuple[bool, str]:
    try:
        import torch
    except ModuleNotFoundError:
        return False, "torch is not installed"
    if not torch.cuda.is_available():
        return False, "no CUDA GPU: torch.cuda.is_available() is False"
    return True, ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker("cuda") for item in items):
        return
    ok, why = _cuda_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=why)
    for item in items:
        if item.get_closest_marker("cuda"):
            item.add_marker(skip)


@pytest.fixture
def device() -> str:
    """The device the session tests on: ``$SHARED_CORE_DEVICE`` or ``"cpu"``."""
    spec = os.environ.get(DEVICE_ENV, "cpu")
    if spec.startswith("cuda"):
        ok, why = _cuda_available()
        if not ok:
            pytest.skip(why)
    return spec


def find_shared_data() -> Path | None:
    """``$SHARED_DATA_DIR``, else ``shared/data`` beside the checkout holding the current folder."""
    env = os.environ.get("SHARED_DATA_DIR")
    if env:
        return Path(env) if Path(env).is_dir() else None
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "uv.lock").exists():
            candidate = folder.parent / "shared" / "data"
            return candidate if candidate.is_dir() else None
    return None


@pytest.fixture
def shared_data() -> Path:
    path = find_shared_data()
    if path is None:
        pytest.skip("../shared/data (real data beside the checkout) is absent")
    return path
