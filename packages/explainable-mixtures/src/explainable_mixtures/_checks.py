"""Boundary checks of the public API: each names the argument, what it got and what it needs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def check_positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: expected a positive int, got {value!r}")
    return int(value)


def check_number(name: str, value: Any, *, low: float, strict: bool = True) -> float:
    """A finite real ``> low`` (``>= low`` when not `strict`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__} {value!r}")
    v = float(value)
    ok = math.isfinite(v) and (v > low if strict else v >= low)
    if not ok:
        bound = f"> {low}" if strict else f">= {low}"
        raise ValueError(f"{name}: expected a finite number {bound}, got {value!r}")
    return v


def as_matrix(
    name: str, value: Any, *, columns: int | None = None, two_d: bool = False
) -> np.ndarray:
    """A finite, non-empty ``(n, columns)`` float64 array (a 1-D array is one column, unless
    `two_d`). The messages also carry scikit-learn's wording, which its estimator checks read."""
    from scipy import sparse

    if sparse.issparse(value):
        raise TypeError(
            f"{name}: expected a dense array, got a {type(value).__name__}: sparse input is not "
            "supported (convert with .toarray())"
        )
    dtype = getattr(value, "dtype", None)
    if dtype is not None and np.issubdtype(dtype, np.complexfloating):
        raise ValueError(f"{name}: expected real numbers, got {dtype}: Complex data not supported")
    try:
        arr = np.array(value, dtype=np.float64)  # a copy: torch tensors share its memory
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"{name}: expected a numeric array, got {type(value).__name__} ({err})"
        ) from err
    if arr.ndim == 1 and two_d:
        raise ValueError(
            f"{name}: expected a 2-D array (n, d), got shape {arr.shape}. Reshape your data "
            "with X.reshape(-1, 1) for a single feature or X.reshape(1, -1) for a single row"
        )
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected shape (n,) or (n, m), got {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(
            f"{name}: expected at least one row and one column, got shape {arr.shape} "
            f"({arr.shape[1]} feature(s) (shape={arr.shape}) while a minimum of 1 is required)"
        )
    if columns is not None and arr.shape[1] != columns:
        raise ValueError(
            f"{name}: expected {columns} column(s) (as in fit), got shape {arr.shape} "
            f"({name} has {arr.shape[1]} features, but ExplainableMixture is expecting "
            f"{columns} features as input)"
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        row, col = map(int, np.argwhere(bad)[0])
        raise ValueError(
            f"{name}: expected finite values, got {arr[row, col]} at row {row}, column {col} "
            f"({int(bad.sum())} non-finite in all; NaN and inf are not allowed)"
        )
    return arr


def check_same_rows(x: np.ndarray, y: np.ndarray) -> None:
    if len(x) != len(y):
        raise ValueError(f"y: expected {len(x)} rows (one per row of X), got {len(y)}")


def check_names(name: str, names: Sequence[str] | None, count: int, prefix: str) -> list[str]:
    """Column names: the given ones (``count`` distinct strings) or ``prefix0, prefix1, ...``."""
    if names is None:
        return [f"{prefix}{j}" for j in range(count)]
    names = list(names)
    if len(names) != count or not all(isinstance(s, str) for s in names):
        raise ValueError(f"{name}: expected {count} strings (one per column), got {names!r}")
    if len(set(names)) != count:
        raise ValueError(f"{name}: expected distinct names, got {names!r}")
    return names


def check_not_constant(name: str, arr: np.ndarray, names: Sequence[str]) -> None:
    scale = arr.std(axis=0)
    constant = [names[int(j)] for j in np.flatnonzero(scale == 0)]
    if constant:
        raise ValueError(
            f"{name}: column(s) {constant} are constant; a rule cannot split on them and "
            f"standardising divides by their spread (0): drop them"
        )
