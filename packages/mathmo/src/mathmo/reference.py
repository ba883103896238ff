"""Slow, exact, readable oracles for the tests.

All objectives are MAXIMISED (MATHMO's normalised space: higher is better, the reference point
below every point, 0 in normalised space).

* `hypervolume_inclusion_exclusion`: the Lebesgue measure of the union of the boxes
  ``[ref, y_i]`` by inclusion-exclusion, ``HV = sum_{S != {}} (-1)^{|S|+1} prod_j (min_{i in S}
  y_ij - ref_j)_+``; ``2^n`` terms, so ``n <= 16``.
* `non_dominated_naive`: the O(n^2) definition of the Pareto filter.
* `hypervolume_slicing`: the HSO slicing recursion (While et al., 2006), exact in any
  dimension and polynomial in ``n``: sort by the last objective in decreasing order; between
  consecutive values of it the slab's cross-section is the (k-1)-D hypervolume of the points
  seen so far; the 2-D base case is a sweep. It was the package's hypervolume in 0.1.0; it
  checks moocore on fronts too large for inclusion-exclusion.
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


def _hv2(y: np.ndarray, ref: np.ndarray) -> float:
    """2-D sweep: sort by the first objective (descending); a point adds the strip
    ``(y_0 - r_0) x (rise of the running maximum of y_1)``, so dominated points add nothing."""
    order = np.lexsort((-y[:, 1], -y[:, 0]))
    running = np.maximum.accumulate(np.concatenate([[ref[1]], y[order, 1]]))
    return float(np.sum((y[order, 0] - ref[0]) * np.diff(running)))


def _hso(y: np.ndarray, ref: np.ndarray) -> float:
    k = y.shape[1]
    if len(y) == 0:
        return 0.0
    if k == 1:
        return float(y[:, 0].max() - ref[0])
    if k == 2:
        return _hv2(y, ref)
    y = y[np.argsort(-y[:, -1], kind="stable")]
    total = 0.0
    for i in range(len(y)):
        upper = y[i, -1]
        lower = y[i + 1, -1] if i + 1 < len(y) else ref[-1]
        if upper > lower:
            head = y[: i + 1, :-1]
            total += (upper - lower) * _hso(head[non_dominated_naive(head)], ref[:-1])
    return total


def hypervolume_slicing(points: np.ndarray, ref: np.ndarray) -> float:
    """Hypervolume dominated by ``points`` above ``ref`` (maximisation), by HSO slicing."""
    y = as_points("points", points)
    r = as_ref("ref", ref, y.shape[1])
    return _hso(y[np.all(y > r, axis=1)], r)
