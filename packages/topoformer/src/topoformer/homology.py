"""Betti numbers of the flag (clique) complex of a graph, 2-skeleton, over Z/2.

The Topo-Scan token of a slice (authors' code: ``pyflagser.flagser_unweighted(A,
max_dimension=2, coeff=2)``) fills every triangle, so b1 is the rank of H_1 of the clique
complex, not the graph's cycle rank |E| - |V| + b0. With boundary maps d_1 (edges -> vertices)
and d_2 (triangles -> edges) over GF(2):

    b0 = |V| - rank d_1,   b1 = |E| - rank d_1 - rank d_2,   b2 = |T| - rank d_2,

and rank d_1 = |V| - #components, so only rank d_2 needs elimination (`gf2_rank`, vectorised
over the rows of a bit-packed matrix). b2 is that of the 2-skeleton (no tetrahedra), so
|V| - |E| + |T| = b0 - b1 + b2 holds exactly.
"""

from __future__ import annotations

import numpy as np


def gf2_rank(rows: np.ndarray, num_columns: int) -> int:
    """Rank over GF(2) of the 0/1 matrix whose row ``r`` has ones at ``rows[r]``.

    Args:
        rows: ``(r, k)`` int64 column indices (k ones per row; a boundary matrix of
            triangles has k = 3). Repeated indices cancel (mod 2).
        num_columns: the number of columns.

    Gaussian elimination on rows packed into uint64 words: each pivot XORs into every other
    row holding its bit in one numpy operation.
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
    rows = rows.astype(np.int64)
    if rows.size == 0:
        return 0
    r = rows.shape[0]
    words = (num_columns + 63) // 64
    m = np.zeros((r, words), dtype=np.uint64)
    bits = np.left_shift(np.uint64(1), (rows % 64).astype(np.uint64))
    for j in range(rows.shape[1]):
        np.bitwise_xor.at(m, (np.arange(r), rows[:, j] // 64), bits[:, j])
    rank = 0
    for col in np.unique(rows).tolist():  # columns without a one cannot hold a pivot
        w, bit = col // 64, np.uint64(1) << np.uint64(col % 64)
        has = (m[rank:, w] & bit) != 0
        if not has.any():
            continue
        p = rank + int(np.argmax(has))
        if p != rank:
            m[[rank, p]] = m[[p, rank]]
        others = np.nonzero((m[:, w] & bit) != 0)[0]
        others = others[others != rank]
        m[others] ^= m[rank]
        rank += 1
        if rank == r:
            break
    return rank


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
