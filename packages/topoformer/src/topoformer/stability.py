"""The stability of Topo-Scan sequences under a change of the filtration values.

Let a_0 < ... < a_N be the thresholds, W_i = [a_i, a_{i+m}] the windows and S(f) the
``(T, 4)`` token sequence. For an item x (a node, or an edge) let k_x be the number of
thresholds a_j at which sign(f(x) - a_j) differs from sign(f'(x) - a_j).

1. **Invariance.** If k_x = 0 for every x (in particular when ``|f - f'| < delta`` and every
   value is more than delta away from every threshold) then S(f') = S(f): every slice has
   the same vertices and edges.
2. **l1 bound.** A threshold is an end of at most two windows, so x changes membership in
   c_x <= 2 k_x windows, and

       ||S(f) - S(f')||_1 <= sum_x c_x L(x) <= sum_x 2 k_x L(x),

   where L(x) bounds the change of one token when x enters or leaves one slice:
   node v of degree d in t triangles: |dV| = 1, |dE| <= d, |db0| <= max(1, d - 1),
   |db1| <= max(d, t), so L(v) = 1 + d + max(1, d - 1) + max(d, t);
   edge e in t triangles: |dV| <= 2, |dE| = 1, |db0| <= 1, |db1| <= max(1, t),
   so L(e) = 4 + max(1, t).
   (From b0 = |V| - rank d_1 and b1 = |E| - rank d_1 - rank d_2: adding v raises rank d_1
   by 0..d and rank d_2 by 0..t; adding e raises rank d_1 by 1 when it brings a new vertex,
   else by 0..1, and rank d_2 by 0..t.)

This is the statement this package proves and tests (`stability_bound`); the paper states an
l1 stability theorem of this kind, whose exact constants we could not check against its text.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topoformer.graph import as_graph, triangle_edges, triangles
from topoformer.topo_scan import windows


def threshold_crossings(f: Any, f2: Any, thresholds: np.ndarray) -> np.ndarray:
    """``(items,)`` k_x: thresholds at which the sign of f(x) - a differs from f'(x) - a."""
    a = np.asarray(thresholds, dtype=np.float64)
    x, y = np.asarray(f, dtype=np.float64), np.asarray(f2, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"f, f2: expected two equal-length 1-D arrays, got {x.shape}, {y.shape}")
    return (np.sign(x[:, None] - a[None, :]) != np.sign(y[:, None] - a[None, :])).sum(1)


def token_change_bound(graph: Any, kind: str = "node") -> np.ndarray:
    """``(items,)`` L(x): the largest l1 change of one token when x enters or leaves a slice."""
    g = as_graph(graph)
    tri = triangles(g)
    if kind == "node":
        d = g.degrees()
        t = (
            np.bincount(tri.ravel(), minlength=g.num_nodes)
            if len(tri)
            else np.zeros(g.num_nodes, np.int64)
        )
        return 1 + d + np.maximum(1, d - 1) + np.maximum(d, t)
    if kind == "edge":
        t = np.zeros(g.num_edges, dtype=np.int64)
        if len(tri):
            np.add.at(t, triangle_edges(g, tri).ravel(), 1)
        return 4 + np.maximum(1, t)
    raise ValueError(f"kind: expected 'node' or 'edge', got {kind!r}")


def stability_bound(
    graph: Any, f: Any, f2: Any, thresholds: np.ndarray, m: int = 2, kind: str = "node"
) -> tuple[float, float]:
    """``(sum_x c_x L(x), sum_x 2 k_x L(x))``: the two bounds on ||S(f) - S(f')||_1."""
    win = windows(thresholds, m)
    x, y = np.asarray(f, dtype=np.float64), np.asarray(f2, dtype=np.float64)
    lx = token_change_bound(graph, kind)
    if x.shape != lx.shape or y.shape != lx.shape:
        raise ValueError(
            f"f, f2: expected {len(lx)} {kind} values each, got shapes {x.shape} and {y.shape}"
        )
    inside_x = (win[:, :1] <= x[None, :]) & (x[None, :] <= win[:, 1:])
    inside_y = (win[:, :1] <= y[None, :]) & (y[None, :] <= win[:, 1:])
    c = (inside_x != inside_y).sum(0)
    k = threshold_crossings(x, y, thresholds)
    return float((c * lx).sum()), float((2 * k * lx).sum())
