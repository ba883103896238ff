"""The one graph type of the package: a simple undirected graph with optional node labels.

Every public function takes anything `as_graph` accepts: a `Graph`, a networkx graph, a TU
graph (`shared_core.data.TUGraph`), a molecular graph (`shared_core.data.MolGraph`: node labels
are atomic numbers) or a pair ``(num_nodes, edge_index)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Graph:
    """A simple undirected graph on nodes ``0 .. num_nodes - 1``.

    Attributes:
        num_nodes: n >= 1.
        edges: ``(m, 2)`` int64, each undirected edge once with ``u < v``, sorted
            lexicographically (so edge ids are canonical).
        node_labels: ``(n,)`` int64 or ``None``.
    """

    num_nodes: int
    edges: np.ndarray
    node_labels: np.ndarray | None = None

    @property
    def num_edges(self) -> int:
        return len(self.edges)

    def degrees(self) -> np.ndarray:
        """``(n,)`` int64 node degrees."""
        return np.bincount(self.edges.ravel(), minlength=self.num_nodes).astype(np.int64)

    def relabel(self, perm: np.ndarray) -> Graph:
        """The same graph with node ``i`` renamed ``perm[i]`` (labels move with their nodes)."""
        perm = np.asarray(perm, dtype=np.int64)
        labels = None
        if self.node_labels is not None:
            labels = np.empty_like(self.node_labels)
            labels[perm] = self.node_labels
        return make_graph(self.num_nodes, perm[self.edges].T, labels)


def make_graph(num_nodes: int, edge_index: Any, node_labels: Any = None) -> Graph:
    """A `Graph` from ``edge_index`` ``(2, m)`` (either or both directions; duplicates merged).

    Raises `ValueError` for no node, a node id outside ``0 .. num_nodes - 1``, or a self-loop
    (the flag complex and Ollivier-Ricci curvature are defined on simple graphs).
    """
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)):
        raise TypeError(f"num_nodes: expected an int, got {type(num_nodes).__name__}")
    n = int(num_nodes)
    if n < 1:
        raise ValueError(f"num_nodes: expected a graph with at least one node, got {n}")
    ei = np.asarray(edge_index)
    if ei.size == 0:
        ei = np.zeros((2, 0), dtype=np.int64)
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_index: expected shape (2, m), got {ei.shape}")
    if not np.issubdtype(ei.dtype, np.integer):
        raise TypeError(f"edge_index: expected integer node ids, got dtype {ei.dtype}")
    ei = ei.astype(np.int64)
    if ei.size and (ei.min() < 0 or ei.max() >= n):
        raise ValueError(f"edge_index: node ids must lie in 0..{n - 1}, got {ei.min()}..{ei.max()}")
    if np.any(ei[0] == ei[1]):
        raise ValueError(
            f"edge_index: self-loop at node {int(ei[0][ei[0] == ei[1]][0])}; "
            "expected a simple graph (remove self-loops first)"
        )
    lo, hi = np.minimum(ei[0], ei[1]), np.maximum(ei[0], ei[1])
    keys = np.unique(lo * n + hi)
    edges = np.stack([keys // n, keys % n], axis=1).astype(np.int64)
    labels = None
    if node_labels is not None:
        labels = np.asarray(node_labels)
        if labels.shape != (n,):
            raise ValueError(f"node_labels: expected shape ({n},), got {labels.shape}")
        if not np.issubdtype(labels.dtype, np.integer):
            raise TypeError(f"node_labels: expected integers, got dtype {labels.dtype}")
        labels = labels.astype(np.int64)
    return Graph(n, edges, labels)


def is_networkx(obj: Any) -> bool:
    """Whether `obj` looks like a networkx graph (duck-typed: networkx is not imported)."""
    return hasattr(obj, "nodes") and hasattr(obj, "edges") and hasattr(obj, "number_of_nodes")


def node_index(obj: Any) -> dict[Any, int]:
    """Node name -> id: networkx's node order for a networkx graph, the identity otherwise."""
    if is_networkx(obj):
        return {v: i for i, v in enumerate(obj.nodes())}
    return {i: i for i in range(as_graph(obj).num_nodes)}


def networkx_edge_ids(obj: Any, graph: Graph) -> np.ndarray | None:
    """For a networkx graph, ``(m,)`` the id in ``graph.edges`` of each edge of ``G.edges()``,
    in that order (``graph = as_graph(G)``); ``None`` for any other input, whose edge order
    is ``graph.edges`` already. ``values_nx = values[ids]``, ``values[ids] = values_nx``."""
    if not is_networkx(obj) or graph.num_edges == 0:
        return None
    index = node_index(obj)
    pairs = np.array([[index[u], index[v]] for u, v in obj.edges()], dtype=np.int64)
    return edge_ids(graph, pairs[:, 0], pairs[:, 1])


def as_graph(obj: Any, label_attr: str | None = None) -> Graph:
    """Convert `obj` (see the module docstring) to a `Graph`.

    Args:
        obj: the graph. A networkx graph's nodes become ``0 .. n - 1`` in ``G.nodes()``
            order; a directed one is refused (Topo-Scan's flag complexes are undirected).
        label_attr: for a networkx graph, the node attribute holding integer node labels
            (e.g. the atomic number), which the ``label`` and ``atomic_weight`` filtrations
            read; every node must have it. ``None``: no labels. Other inputs carry their
            labels already (a TU graph's labels, a molecule's atomic numbers).
    """
    if isinstance(obj, Graph):
        return obj
    if label_attr is not None and not is_networkx(obj):
        raise TypeError(
            f"label_attr: only used for a networkx graph, got {label_attr!r} with a "
            f"{type(obj).__name__}"
        )
    if hasattr(obj, "atoms") and hasattr(obj, "edge_index"):  # shared_core MolGraph
        return make_graph(len(obj.atoms), obj.edge_index, np.asarray(obj.atoms)[:, 0])
    if hasattr(obj, "num_nodes") and hasattr(obj, "edge_index"):  # TUGraph (or PyG Data)
        labels = getattr(obj, "node_labels", None)
        return make_graph(int(obj.num_nodes), np.asarray(obj.edge_index), labels)
    if is_networkx(obj):
        if getattr(obj, "is_directed", lambda: False)():
            raise ValueError(
                f"graph: expected an undirected networkx graph, got a directed "
                f"{type(obj).__name__}; convert it with G.to_undirected() first"
            )
        index = node_index(obj)
        ei = np.array([[index[u], index[v]] for u, v in obj.edges()], dtype=np.int64)
        labels = None
        if label_attr is not None:
            missing = [v for v, d in obj.nodes(data=True) if label_attr not in d]
            if missing:
                raise ValueError(
                    f"label_attr: node {missing[0]!r} has no attribute {label_attr!r}; "
                    "expected every node to carry an integer label"
                )
            labels = np.array([d[label_attr] for _, d in obj.nodes(data=True)])
            if not np.issubdtype(labels.dtype, np.integer):
                raise TypeError(
                    f"label_attr: node attribute {label_attr!r} must hold integers, got "
                    f"values of dtype {labels.dtype}"
                )
        return make_graph(len(index), ei.T if len(ei) else np.zeros((2, 0), np.int64), labels)
    if isinstance(obj, tuple) and len(obj) == 2:
        return make_graph(obj[0], obj[1])
    raise TypeError(
        "graph: expected a topoformer Graph, networkx graph, TUGraph, MolGraph or "
        f"(num_nodes, edge_index), got {type(obj).__name__}"
    )


def edge_ids(graph: Graph, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The ids (rows of ``graph.edges``) of the edges ``{u[k], v[k]}``; each must exist."""
    n = graph.num_nodes
    keys = graph.edges[:, 0] * n + graph.edges[:, 1]
    q = np.minimum(u, v) * n + np.maximum(u, v)
    return np.searchsorted(keys, q).astype(np.int64)


def triangles(graph: Graph) -> np.ndarray:
    """``(t, 3)`` int64 vertex triples ``a < b < c`` of every triangle, sorted."""
    n, e = graph.num_nodes, graph.edges
    if len(e) < 3:
        return np.zeros((0, 3), dtype=np.int64)
    if n <= 256:  # dense rows: no sparse-matrix overhead on the small graphs of datasets
        upper = np.zeros((n, n), dtype=bool)
        upper[e[:, 0], e[:, 1]] = True
        k, w = np.nonzero(upper[e[:, 0]] & upper[e[:, 1]])
    else:
        import scipy.sparse as sp

        up = sp.csr_matrix((np.ones(len(e), dtype=np.int8), (e[:, 0], e[:, 1])), shape=(n, n))
        common = up[e[:, 0]].multiply(up[e[:, 1]]).tocoo()
        k, w = common.row, common.col
    # row k: vertices w > v adjacent to both endpoints of edge k = (u, v)
    tri = np.stack([e[k, 0], e[k, 1], w], axis=1).astype(np.int64)
    return tri[np.lexsort((tri[:, 2], tri[:, 1], tri[:, 0]))]


def component_labels(num_nodes: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """``(num_nodes,)`` the smallest node id of each node's connected component.

    Small graphs: min-label propagation with pointer jumping (numpy only, no sparse-matrix
    overhead): each round every edge pulls the smaller label across, then labels follow their
    own labels to a fixed point. Large ones: scipy's ``connected_components``.
    """
    lab = np.arange(num_nodes)
    if len(src) == 0:
        return lab
    if num_nodes > 4096:  # long paths need many rounds: scipy's traversal is linear time
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        a = coo_matrix((np.ones(len(src)), (src, dst)), shape=(num_nodes, num_nodes))
        comp = connected_components(a, directed=False)[1]
        first = np.full(comp.max() + 1, num_nodes)
        np.minimum.at(first, comp, lab)
        return first[comp]
    while True:
        new = lab.copy()
        np.minimum.at(new, src, lab[dst])
        np.minimum.at(new, dst, lab[src])
        while True:
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, lab):
            return lab
        lab = new


def triangle_edges(graph: Graph, tris: np.ndarray) -> np.ndarray:
    """``(t, 3)`` edge ids of the sides ``ab, ac, bc`` of each triangle ``(a, b, c)``."""
    return np.stack(
        [edge_ids(graph, tris[:, 0], tris[:, 1]), edge_ids(graph, tris[:, 0], tris[:, 2]),
         edge_ids(graph, tris[:, 1], tris[:, 2])], axis=1,
    )  # fmt: skip


def triangle_edge_ids(graph: Graph) -> np.ndarray:
    """``(t, 3)`` edge ids of the sides of every triangle, in no particular triangle order.

    The same rows as ``triangle_edges(graph, triangles(graph))`` up to row order; on graphs
    of at most 256 nodes read from a dense ``(n, n)`` table of edge ids (no sort, no search),
    the path Topo-Scan takes on every graph it scans.
    """
    n, e = graph.num_nodes, graph.edges
    if n > 256:
        return triangle_edges(graph, triangles(graph))
    if len(e) < 3:
        return np.zeros((0, 3), dtype=np.int64)
    eid = np.full((n, n), -1, dtype=np.int64)
    eid[e[:, 0], e[:, 1]] = np.arange(len(e))
    upper = eid >= 0
    k, w = np.nonzero(upper[e[:, 0]] & upper[e[:, 1]])  # edge k = (u, v), u < v < w
    return np.stack([k, eid[e[k, 0], w], eid[e[k, 1], w]], axis=1)
