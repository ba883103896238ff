"""Boundary checks shared by the public entry points: each names the argument, what it
expected and what it received."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def as_points(name: str, points: Any, k: int | None = None) -> np.ndarray:
    """A finite ``(n, k)`` float64 array of objective vectors (``n`` may be 0)."""
    arr = as_floats(name, points)
    if arr.ndim != 2:
        raise ValueError(
            f"{name}: expected a 2-D array (points, objectives), got shape {arr.shape}"
        )
    if arr.shape[1] < 1:
        raise ValueError(f"{name}: expected at least one objective column, got shape {arr.shape}")
    if k is not None and arr.shape[1] != k:
        raise ValueError(f"{name}: expected {k} objective columns, got shape {arr.shape}")
    # a sum is NaN or inf whenever an entry is, and otherwise only on overflow (then the
    # element-wise check decides): a third of the cost on the small fronts the search sees
    if not math.isfinite(arr.sum()) and not np.isfinite(arr).all():
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return arr


def as_floats(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array, or a ValueError naming `name`."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"{name}: expected numbers (an array of floats), got {value!r:.200}"
        ) from err


def as_ref(name: str, ref: Any, k: int) -> np.ndarray:
    """A finite reference point of length ``k``."""
    arr = as_floats(name, ref)
    if arr.shape != (k,):
        raise ValueError(f"{name}: expected shape ({k},) to match the points, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: expected finite values, got {arr.tolist()}")
    return arr


def positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name}: expected a positive int, got {value}")
    return int(value)


def nonneg_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__}")
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{name}: expected a finite number >= 0, got {value}")
    return float(value)
