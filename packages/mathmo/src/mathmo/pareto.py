"""Pareto filter and exact hypervolume, in MATHMO's normalised (maximise) space.

Both are moocore's C implementations (the library pymoo's own indicator calls), through its
public API: the hypervolume is exact in any dimension (HV3D+/HV4D+ below 5 objectives,
WFG-style above), which the search evaluates a few hundred times per run, always against the
same reference point, so one `moocore.Hypervolume` object per reference point is built once and
reused (the object checks the reference once; each call then only converts the points). `mathmo.reference` keeps the readable
oracles they are tested against: inclusion-exclusion, the O(n^2) Pareto filter, and the HSO
slicing recursion that 0.1.0 used here.
"""

from __future__ import annotations

from functools import lru_cache

import moocore
import numpy as np

from mathmo._checks import as_floats, as_points, as_ref


def non_dominated(points: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated rows of ``points`` (maximisation; duplicates kept).

    A row is removed iff another row is ``>=`` in every objective and ``>`` in one.
    """
    y = as_points("points", points)
    if len(y) == 0:
        return np.zeros(0, dtype=bool)
    return np.asarray(moocore.is_nondominated(-y, keep_weakly=True), dtype=bool)


@lru_cache(maxsize=64)
def _indicator(neg_ref: tuple[float, ...]) -> moocore.Hypervolume:
    """moocore's indicator for the (minimisation) reference point ``neg_ref``, built once."""
    return moocore.Hypervolume(ref=neg_ref)


def hypervolume(points: np.ndarray, ref: np.ndarray | None = None) -> float:
    """Exact hypervolume of the region dominated by ``points`` and dominating ``ref``.

    points: ``(n, k)`` objective vectors, higher is better. ref: ``(k,)``, default the origin
    (the worst corner of MATHMO's normalised ``[0, 1]^k``).
    """
    y = as_points("points", points)
    k = y.shape[1]
    neg_ref = (-0.0,) * k if ref is None else tuple((-as_ref("ref", ref, k)).tolist())
    if len(y) == 0:
        return 0.0
    if k == 1:
        return max(float(y[:, 0].max() + neg_ref[0]), 0.0)
    # moocore minimises, and ignores points that do not strictly dominate the reference
    return float(_indicator(neg_ref)(-y))


def hypervolume_gain(
    front: np.ndarray, candidate: np.ndarray, ref: np.ndarray | None = None
) -> float:
    """``HV(front + {candidate}) - HV(front)``: what evaluating ``candidate`` would add."""
    c = as_points("candidate", as_floats("candidate", candidate).reshape(1, -1))
    f = as_floats("front", front)
    if f.size == 0:
        f = f.reshape(0, c.shape[1])
    if f.ndim == 2 and f.shape[1] != c.shape[1]:
        raise ValueError(
            f"candidate: expected {f.shape[1]} objectives (the front's columns), got {c.shape[1]}"
        )
    f = as_points("front", f)
    return (
        hypervolume(np.vstack([f, c]), ref) - hypervolume(f, ref) if len(f) else hypervolume(c, ref)
    )
