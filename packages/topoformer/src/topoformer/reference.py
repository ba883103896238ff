"""Slow, exact, readable oracles for the tests (float64, networkx and dense matrices).

- `reference_betti`: builds the flag complex's 2-skeleton explicitly (itertools), writes the
  dense boundary matrices d_1, d_2 over GF(2) and row-reduces them one entry at a time.
- `reference_ollivier_ricci`: W1 between the two lazy-walk measures as a linear program
  (scipy's HiGHS) on networkx's shortest-path metric; kappa = 1 - W1 / d(u, v).
- `reference_thresholds`: the authors' ``process_thresholds`` (a `Counter` of the pooled
  values, the N - 1 most frequent besides min and max), line for line.
- `reference_scan`: one networkx subgraph per window (``subgraph`` for node filtrations,
  ``edge_subgraph`` for edge filtrations, as in the authors' ``sub_PH``), then
  `reference_betti`.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

import numpy as np


def gf2_rank_dense(matrix: np.ndarray) -> int:
    """Rank over GF(2) of a dense 0/1 matrix by textbook row reduction."""
    a = (np.asarray(matrix) % 2).astype(np.uint8).copy()
    rank = 0
    rows, cols = a.shape
    for c in range(cols):
        pivot = next((r for r in range(rank, rows) if a[r, c]), None)
        if pivot is None:
            continue
        a[[rank, pivot]] = a[[pivot, rank]]
        for r in range(rows):
            if r != rank and a[r, c]:
                a[r] ^= a[rank]
        rank += 1
    return rank


def reference_betti(nx_graph: object) -> tuple[int, int, int]:
    """``(b0, b1, b2)`` of the 2-skeleton of the flag complex of a networkx graph."""
    import networkx as nx

    g: nx.Graph = nx.Graph(nx_graph)
    nodes = sorted(g.nodes())
    if not nodes:
        return (0, 0, 0)
    edges = sorted(tuple(sorted(e)) for e in g.edges())
    tris = [
        t for t in itertools.combinations(nodes, 3)
        if g.has_edge(t[0], t[1]) and g.has_edge(t[0], t[2]) and g.has_edge(t[1], t[2])
    ]  # fmt: skip
    vid = {v: i for i, v in enumerate(nodes)}
    eid = {e: i for i, e in enumerate(edges)}
    d1 = np.zeros((len(nodes), len(edges)), dtype=np.uint8)
    for j, (u, v) in enumerate(edges):
        d1[vid[u], j] = d1[vid[v], j] = 1
    d2 = np.zeros((len(edges), len(tris)), dtype=np.uint8)
    for j, (a, b, c) in enumerate(tris):
        for e in ((a, b), (a, c), (b, c)):
            d2[eid[e], j] = 1
    r1 = gf2_rank_dense(d1) if edges else 0
    r2 = gf2_rank_dense(d2) if tris else 0
    return (len(nodes) - r1, len(edges) - r1 - r2, len(tris) - r2)


def reference_ollivier_ricci(nx_graph: object, alpha: float = 0.5) -> dict[tuple, float]:
    """``{(u, v): kappa}`` for every edge of an unweighted networkx graph, by linear programming.

    mu_x = alpha at x and (1 - alpha) / deg(x) at each neighbour; W1 minimises sum P_ij d_ij
    over couplings P >= 0 with row sums mu_u and column sums mu_v.
    """
    import networkx as nx
    from scipy.optimize import linprog

    g: nx.Graph = nx.Graph(nx_graph)
    dist = dict(nx.all_pairs_shortest_path_length(g))
    out = {}
    for u, v in g.edges():
        su, sv = [*g.neighbors(u), u], [*g.neighbors(v), v]
        mu = np.array([(1 - alpha) / g.degree(u)] * (len(su) - 1) + [alpha])
        mv = np.array([(1 - alpha) / g.degree(v)] * (len(sv) - 1) + [alpha])
        cost = np.array([[dist[x][y] for y in sv] for x in su], dtype=np.float64)
        p, q = len(su), len(sv)
        a_eq = np.zeros((p + q, p * q))
        for i in range(p):
            a_eq[i, i * q : (i + 1) * q] = 1.0
        for j in range(q):
            a_eq[p + j, j::q] = 1.0
        res = linprog(cost.ravel(), A_eq=a_eq, b_eq=np.concatenate([mu, mv]), method="highs")
        out[(u, v)] = 1.0 - res.fun / dist[u][v]
    return out


def reference_thresholds(pooled: Sequence[float], n_intervals: int = 20) -> list[float]:
    """The authors' ``process_thresholds(lst, N)`` (Topo-Scan notebooks), line for line."""
    count = Counter(pooled)
    min_val, max_val = min(pooled), max(pooled)
    count.pop(min_val, None)
    count.pop(max_val, None)
    top_values = sorted(count.items(), key=lambda x: x[1], reverse=True)[: n_intervals - 1]
    return sorted([min_val] + [value for value, _ in top_values] + [max_val])


def reference_scan(
    nx_graph: object, values: dict, thresholds: Sequence[float], m: int = 2, kind: str = "node"
) -> np.ndarray:
    """``(T, 4)`` tokens; `values` maps each node (or each edge ``(u, v)``) to its value."""
    import networkx as nx

    g: nx.Graph = nx.Graph(nx_graph)
    a = sorted(thresholds)
    rows = []
    for i in range(len(a) - m):
        lo, hi = a[i], a[i + m]
        if kind == "node":
            sub = g.subgraph([v for v in g.nodes() if lo <= values[v] <= hi])
        else:
            key = {frozenset(e): f for e, f in values.items()}
            sub = g.edge_subgraph([e for e in g.edges() if lo <= key[frozenset(e)] <= hi])
        b0, b1, _ = reference_betti(sub)
        rows.append([b0, b1, sub.number_of_nodes(), sub.number_of_edges()])
    return np.array(rows, dtype=np.float64).reshape(-1, 4)
