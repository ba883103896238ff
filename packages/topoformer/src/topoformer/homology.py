"""Betti numbers of the flag (clique) complex of a graph, 2-skeleton, over Z/2.

The Topo-Scan token of a slice (authors' code: ``pyflagser.flagser_unweighted(A,
max_dimension=2, coeff=2)``) fills every triangle, so b1 is the rank of H_1 of the clique
complex, not the graph's cycle rank |E| - |V| + b0. With boundary maps d_1 (edges -> vertices)
and d_2 (triangles -> edges) over GF(2):

    b0 = |V| - rank d_1,   b1 = |E| - rank d_1 - rank d_2,   b2 = |T| - rank d_2,

and rank d_1 = |V| - #components (`forest_ranks`, union-find), so only rank d_2 needs
elimination (`rank_packed`, rows packed into Python ints). b2 is that of the 2-skeleton (no
tetrahedra), so |V| - |E| + |T| = b0 - b1 + b2 holds exactly.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def rank_packed(rows: Iterable[int]) -> int:
    """Rank over GF(2) of rows given as bit-packed Python ints (bit j = column j).

    Gaussian elimination keyed by each row's highest set bit: a row is reduced by the pivot
    holding its top bit until it becomes a new pivot or vanishes. Python's arbitrary-width
    ints make one XOR a single C call whatever the width, so on the few dozen triangles of a
    molecule-sized slice this beats any per-column numpy loop (and gudhi's per-window
    persistence, `benchmarks/bench_topo_scan.py`).
    """
    pivots: dict[int, int] = {}
    for r in rows:
        while r:
            top = r.bit_length() - 1
            p = pivots.get(top)
            if p is None:
                pivots[top] = r
                break
            r ^= p
    return len(pivots)


def forest_ranks(
    num_groups: int, group: np.ndarray, src: np.ndarray, dst: np.ndarray
) -> np.ndarray:
    """``(num_groups,)`` rank d_1 of each edge group: the edges a spanning forest keeps.

    Edge k joins ``src[k]`` and ``dst[k]`` (node ids shared by all groups, each group a
    disjoint copy: pass ``group * n + u``) and belongs to ``group[k]``. Union-find with path
    halving over Python lists: linear in the edges and without per-round numpy calls.
    rank d_1 = |V| - #components, so b0 of a group's slice is its vertex count minus this.
    """
    ranks = [0] * num_groups
    if len(src) == 0:
        return np.zeros(num_groups, dtype=np.int64)
    parent = list(range(int(max(src.max(), dst.max())) + 1))
    for w, a, b in zip(group.tolist(), src.tolist(), dst.tolist(), strict=True):
        pa = parent[a]
        while pa != a:
            parent[a] = a = parent[pa]
            pa = parent[a]
        pb = parent[b]
        while pb != b:
            parent[b] = b = parent[pb]
            pb = parent[b]
        if a < b:
            parent[b] = a
            ranks[w] += 1
        elif b < a:
            parent[a] = b
            ranks[w] += 1
    return np.asarray(ranks, dtype=np.int64)


def gf2_rank(rows: np.ndarray, num_columns: int) -> int:
    """Rank over GF(2) of the 0/1 matrix whose row ``r`` has ones at ``rows[r]``.

    Args:
        rows: ``(r, k)`` int64 column indices (k ones per row; a boundary matrix of
            triangles has k = 3). Repeated indices cancel (mod 2).
        num_columns: the number of columns.

    Each row is packed into a Python int (`pack_rows`) and reduced by `rank_packed`.
    """
    if (
        isinstance(num_columns, bool)
        or not isinstance(num_columns, (int, np.integer))
        or num_columns < 0
    ):
        raise ValueError(f"num_columns: expected an int >= 0, got {num_columns!r}")
    rows = np.asarray(rows)
    if rows.size and not np.issubdtype(rows.dtype, np.integer):
        raise TypeError(f"rows: expected integer column indices, got dtype {rows.dtype}")
    if rows.ndim != 2:
        raise ValueError(f"rows: expected shape (r, k), got {rows.shape}")
    if rows.size and (rows.min() < 0 or rows.max() >= num_columns):
        raise ValueError(
            f"rows: column indices must lie in 0..{num_columns - 1}, got {rows.min()}..{rows.max()}"
        )
    return rank_packed(pack_rows(rows))


def pack_rows(rows: np.ndarray) -> list[int]:
    """``(r, k)`` column indices -> r Python ints with bit j set iff j occurs an odd number
    of times in the row."""
    packed = []
    for row in rows.tolist():
        x = 0
        for j in row:
            x ^= 1 << j
        packed.append(x)
    return packed


def flag_betti(num_nodes: int, edges: np.ndarray, tris: np.ndarray | None = None) -> np.ndarray:
    """``(b0, b1, b2)`` of the flag complex's 2-skeleton of the graph ``(num_nodes, edges)``.

    `edges` ``(m, 2)`` node pairs (either order; duplicates merged); `tris` the triangles of
    the canonical edge list (computed if not given). Zero nodes give ``(0, 0, 0)``.
    """
    from topoformer.graph import Graph, component_labels, make_graph, triangle_edges, triangles

    if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)) or num_nodes < 0:
        raise ValueError(f"num_nodes: expected an int >= 0, got {num_nodes!r}")
    e = np.asarray(edges)
    if e.size and (e.ndim != 2 or e.shape[1] != 2):
        raise ValueError(f"edges: expected shape (m, 2), got {e.shape}")
    if num_nodes == 0:
        if e.size:
            raise ValueError("edges: a graph with no node has no edge")
        return np.zeros(3, dtype=np.int64)
    canon = make_graph(num_nodes, e.reshape(-1, 2).T)  # checks ids, merges duplicates
    g = Graph(num_nodes, canon.edges)
    t = triangles(g) if tris is None else tris
    comps = int(
        (component_labels(num_nodes, g.edges[:, 0], g.edges[:, 1]) == np.arange(num_nodes)).sum()
    )
    rank1 = num_nodes - comps
    rank2 = 0
    if len(t):
        ids = triangle_edges(g, t)
        rank2 = gf2_rank(ids, len(g.edges))
    return np.array([comps, len(g.edges) - rank1 - rank2, len(t) - rank2], dtype=np.int64)
