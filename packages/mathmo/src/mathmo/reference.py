"""Slow, exact, readable oracles for the tests.

All objectives are MAXIMISED (MATHMO's normalised space: higher is better, the reference point
below every point, 0 in normalised space).

* `hypervolume_inclusion_exclusion`: the Lebesgue measure of the union of the boxes
  ``[ref, y_i]`` by inclusion-exclusion, ``HV = sum_{S != {}} (-1)^{|S|+1} prod_j (min_{i in S}
  y_ij - ref_j)_+``; ``2^n`` terms, so ``n <= 16``.
* `non_dominated_naive`: the O(n^2) definition of the Pareto filter.
"""

from __future__ import annotations

import itertools

import numpy as np

from mathmo._checks import as_points, as_ref


def dominates(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` Pareto-dominates ``b`` (maximisation): ``a >= b`` everywhere and ``>`` somewhere."""
    return bool(np.all(a >= b) and np.any(a > b))


def non_dominated_naive(points: np.ndarray) -> np.ndarray:
    """Boolean mask of the points no other point dominates (duplicates all kept)."""
    y = as_points("points", points)
    return np.array(
        [not any(dominates(y[j], y[i]) for j in range(len(y)) if j != i) for i in range(len(y))],
        dtype=bool,
    )


def hypervolume_inclusion_exclusion(points: np.ndarray, ref: np.ndarray) -> float:
    """Hypervolume dominated by ``points`` above ``ref`` (maximisation), by inclusion-exclusion."""
    y = as_points("points", points)
    r = as_ref("ref", ref, y.shape[1])
    if len(y) > 16:
        raise ValueError(
            f"points: inclusion-exclusion takes 2^n terms; expected n <= 16, got {len(y)}"
        )
    total = 0.0
    for size in range(1, len(y) + 1):
        sign = 1.0 if size % 2 else -1.0
        for subset in itertools.combinations(range(len(y)), size):
            corner = y[list(subset)].min(axis=0)
            total += sign * float(np.prod(np.clip(corner - r, 0.0, None)))
    return total
