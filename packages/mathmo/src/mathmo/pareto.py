"""Pareto filter and exact hypervolume, in MATHMO's normalised (maximise) space.

The hypervolume is computed by the HSO slicing recursion (While et al., 2006): sort the points by
the last objective in decreasing order; between consecutive values of that objective the slab's
cross-section is the (k-1)-D hypervolume of the points seen so far. The 2-D base case is a
vectorised sweep, ``O(n log n)``; ``k`` objectives cost ``O(n^{k-2} n log n)``, plenty for fronts of a few hundred points
with the 2-3 objectives modelling tasks have. Points that do not exceed the reference point in
every objective contribute nothing and are dropped first.
"""

from __future__ import annotations

import numpy as np

from mathmo._checks import as_points, as_ref


def non_dominated(points: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated rows of ``points`` (maximisation; duplicates kept).

    A row is removed iff another row is ``>=`` in every objective and ``>`` in one.
    """
    y = as_points("points", points)
    n = len(y)
    keep = np.ones(n, dtype=bool)
    for i in range(n):
        if not keep[i]:
            continue
        ge = np.all(y >= y[i], axis=1) & np.any(y > y[i], axis=1)
        if ge.any():
            keep[i] = False
            continue
        # y[i] survives; drop everything it dominates
        dominated = np.all(y[i] >= y, axis=1) & np.any(y[i] > y, axis=1)
        keep &= ~dominated
    return keep


def _hv2(y: np.ndarray, ref: np.ndarray) -> float:
    """2-D sweep, vectorised: sort by the first objective (descending); a point adds the strip
    ``(y_0 - r_0) x (rise of the running maximum of y_1)``, so dominated points add nothing."""
    order = np.lexsort((-y[:, 1], -y[:, 0]))
    running = np.maximum.accumulate(np.concatenate([[ref[1]], y[order, 1]]))
    return float(np.sum((y[order, 0] - ref[0]) * np.diff(running)))


def _hv(y: np.ndarray, ref: np.ndarray) -> float:
    k = y.shape[1]
    if len(y) == 0:
        return 0.0
    if k == 1:
        return float(y[:, 0].max() - ref[0])
    if k == 2:
        return _hv2(y, ref)
    order = np.argsort(-y[:, -1], kind="stable")
    y = y[order]
    total = 0.0
    for i in range(len(y)):
        upper = y[i, -1]
        lower = y[i + 1, -1] if i + 1 < len(y) else ref[-1]
        if upper > lower:
            head = y[: i + 1, :-1]
            if head.shape[1] > 2:  # the 2-D sweep ignores dominated points by itself
                head = head[non_dominated(head)]
            total += (upper - lower) * _hv(head, ref[:-1])
    return total


def hypervolume(points: np.ndarray, ref: np.ndarray | None = None) -> float:
    """Exact hypervolume of the region dominated by ``points`` and dominating ``ref``.

    points: ``(n, k)`` objective vectors, higher is better. ref: ``(k,)``, default the origin
    (the worst corner of MATHMO's normalised ``[0, 1]^k``).
    """
    y = as_points("points", points)
    r = np.zeros(y.shape[1]) if ref is None else as_ref("ref", ref, y.shape[1])
    y = y[np.all(y > r, axis=1)]
    if len(y) == 0:
        return 0.0
    if y.shape[1] > 3:  # below 4 objectives the sweeps are exact on dominated points too
        y = y[non_dominated(y)]
    return float(_hv(y, r))


def hypervolume_gain(
    front: np.ndarray, candidate: np.ndarray, ref: np.ndarray | None = None
) -> float:
    """``HV(front + {candidate}) - HV(front)``: what evaluating ``candidate`` would add."""
    c = np.asarray(candidate, dtype=np.float64).reshape(1, -1)
    f = np.asarray(front, dtype=np.float64).reshape(-1, c.shape[1])
    return (
        hypervolume(np.vstack([f, c]), ref) - hypervolume(f, ref) if len(f) else hypervolume(c, ref)
    )
