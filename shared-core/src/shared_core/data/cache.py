"""Where derived data is cached (``$SHARED_CORE_CACHE``, default ``~/.cache/shared-core``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from shared_core.atomic import atomic_write


def cache_dir(*parts: str) -> Path:
    root = Path(os.environ.get("SHARED_CORE_CACHE", Path.home() / ".cache" / "shared-core"))
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def cached_arrays(name: str, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Load ``<cache>/<name>.npz``, or build it, write it atomically and return it."""
    path = cache_dir() / f"{name}.npz"
    if path.exists():
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    arrays: dict[str, Any] = build()
    atomic_write(path, lambda f: np.savez(f, **arrays))
    return arrays
