"""Filtration functions of Topo-Scan: node functions and the edge function (Ollivier-Ricci).

Each returns float64 values; `filtration_values` rounds them to 6 decimals, as the authors'
notebooks do before pooling thresholds (so equal values across graphs pool together).

- ``degree``: degree centrality deg(v) / (n - 1) (networkx's convention: 1 for a lone node).
- ``hks``: heat kernel signature sum_k exp(-t lambda_k) phi_k(v)^2 of the normalised
  Laplacian at ``t = 1`` (the time is not given by the authors' public code).
- ``label``: the node label (the atom type: atomic number for a molecule, the TU label for
  MUTAG).
- ``atomic_weight``: the standard atomic weight of each atom (RDKit's periodic table), the
  paper's molecular node filtration ("atomic weight", note section "Loss & Training"; the
  authors' ``MPP_FE/*atom.pkl`` features); needs atomic numbers as node labels.
- ``ricci``: Ollivier-Ricci curvature of each edge, alpha = 0.5 (`ollivier_ricci`).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from topoformer.graph import Graph, as_graph, networkx_edge_ids

Kind = Literal["node", "edge"]
FILTRATIONS: dict[str, Kind] = {
    "degree": "node", "hks": "node", "label": "node", "atomic_weight": "node", "ricci": "edge",
}  # fmt: skip
"""Known filtration names and whether they live on nodes or edges."""


def check_filtration(name: str) -> Kind:
    """The kind of filtration `name`; `ValueError` naming the known ones otherwise."""
    if not isinstance(name, str) or name not in FILTRATIONS:
        raise ValueError(f"filtration: expected one of {sorted(FILTRATIONS)}, got {name!r}")
    return FILTRATIONS[name]


def degree_centrality(graph: Graph) -> np.ndarray:
    """``(n,)`` deg(v) / (n - 1); 1.0 for a graph of one node (networkx's convention)."""
    graph = as_graph(graph)
    n = graph.num_nodes
    if n == 1:
        return np.ones(1)
    return graph.degrees() / (n - 1)


def heat_kernel_signature(graph: Graph, t: float = 1.0) -> np.ndarray:
    """``(n,)`` HKS_t(v) = sum_k exp(-t lambda_k) phi_k(v)^2 of L = I - D^-1/2 A D^-1/2."""
    if not (isinstance(t, (int, float)) and np.isfinite(t) and t > 0):
        raise ValueError(f"t: expected a finite diffusion time > 0, got {t!r}")
    graph = as_graph(graph)
    n = graph.num_nodes
    a = np.zeros((n, n))
    a[graph.edges[:, 0], graph.edges[:, 1]] = 1.0
    a += a.T
    deg = a.sum(1)
    inv = np.where(deg > 0, 1.0 / np.sqrt(np.maximum(deg, 1e-300)), 0.0)
    lap = np.eye(n) - inv[:, None] * a * inv[None, :]
    lam, phi = np.linalg.eigh(lap)
    return (phi**2 * np.exp(-t * lam)[None, :]).sum(1)


def atomic_weight(graph: Graph) -> np.ndarray:
    """``(n,)`` standard atomic weight of each node's element (node labels = atomic numbers)."""
    graph = as_graph(graph)
    z = _labels(graph, "atomic_weight")
    if np.any(z < 1) or np.any(z > 118):
        raise ValueError(
            f"filtration: 'atomic_weight' needs atomic numbers 1..118 as node labels, got "
            f"{int(z.min())}..{int(z.max())}"
        )
    try:
        from rdkit import Chem
    except ImportError as err:  # pragma: no cover - the chem extra is installed in CI
        raise ImportError(
            "the 'atomic_weight' filtration needs RDKit: pip install 'topoformer[chem]'"
        ) from err
    table = Chem.GetPeriodicTable()
    weight = {int(a): table.GetAtomicWeight(int(a)) for a in np.unique(z)}
    return np.array([weight[int(a)] for a in z])


def _labels(graph: Graph, name: str) -> np.ndarray:
    if graph.node_labels is None:
        raise ValueError(
            f"filtration: {name!r} needs node labels, and this graph has none (for a networkx "
            "graph pass as_graph(G, label_attr=...) first)"
        )
    return graph.node_labels


def ollivier_ricci(
    graph: Graph, alpha: float = 0.5, weights: np.ndarray | None = None
) -> np.ndarray:
    """``(m,)`` Ollivier-Ricci curvature kappa(u, v) = 1 - W1(mu_u, mu_v) / d(u, v) per edge.

    mu_x puts mass alpha on x and shares 1 - alpha over its neighbours y in proportion to
    exp(-w(x, y)^2) (uniform when unweighted); W1 is exact optimal transport (POT's
    ``ot.emd2``) under the graph's shortest-path metric d. These are GraphRicciCurvature
    0.6.1's defaults (``OllivierRicci(G, alpha)``: base e, exp_power 2, exact OT for supports
    this small), so the values agree with it (tested against its output).

    Args:
        graph: the graph; values come in its edge order (``G.edges()`` for a networkx
            graph, ``Graph.edges`` otherwise), the order `scan` expects.
        alpha: laziness in [0, 1).
        weights: ``(m,)`` positive edge lengths in that same order, or ``None`` for 1.
    """
    import ot
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    obj, graph = graph, as_graph(graph)
    ids = networkx_edge_ids(obj, graph)
    if not (isinstance(alpha, (int, float)) and 0.0 <= alpha < 1.0):
        raise ValueError(f"alpha: expected a number in [0, 1), got {alpha!r}")
    n, e = graph.num_nodes, graph.edges
    w = np.ones(len(e)) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (len(e),) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(
            f"weights: expected ({len(e)},) finite positive edge lengths, got shape {w.shape}"
        )
    if len(e) == 0:
        return np.zeros(0)
    if ids is not None:
        w = w[np.argsort(ids)]  # w[j] belongs to graph edge ids[j]
    adj = csr_matrix(
        (
            np.concatenate([w, w]),
            (np.concatenate([e[:, 0], e[:, 1]]), np.concatenate([e[:, 1], e[:, 0]])),
        ),
        shape=(n, n),
    )
    dist = shortest_path(adj, method="D", directed=False)
    nbr = np.split(adj.indices, adj.indptr[1:-1])
    nbr_w = np.split(adj.data, adj.indptr[1:-1])
    measures = []
    for x in range(n):
        p = np.exp(-(nbr_w[x] ** 2))
        s = p.sum()
        p = (1.0 - alpha) * p / s if s > 1e-7 else np.full(len(p), (1.0 - alpha) / max(1, len(p)))
        measures.append((np.append(nbr[x], x), np.append(p, alpha)))
    out = np.empty(len(e))
    for k, (u, v) in enumerate(e):
        (su, mu), (sv, mv) = measures[u], measures[v]
        cost = np.ascontiguousarray(dist[np.ix_(su, sv)])
        d_uv = dist[u, v]
        out[k] = 0.0 if d_uv < 1e-7 else 1.0 - float(ot.emd2(mu, mv, cost)) / d_uv
    return out if ids is None else out[ids]


def filtration_values(graph: Graph, name: str, decimals: int = 6) -> np.ndarray:
    """The values of filtration `name` on `graph` (nodes or edges), rounded to `decimals`,
    in the order of the object passed (a networkx graph's ``G.nodes()`` / ``G.edges()``)."""
    kind = check_filtration(name)
    obj, graph = graph, as_graph(graph)
    if name == "degree":
        f = degree_centrality(graph)
    elif name == "hks":
        f = heat_kernel_signature(graph)
    elif name == "label":
        f = _labels(graph, "label").astype(np.float64)
    elif name == "atomic_weight":
        f = atomic_weight(graph)
    else:
        f = ollivier_ricci(obj)
    assert len(f) == (graph.num_nodes if kind == "node" else graph.num_edges)
    return np.round(f, decimals) + 0.0  # + 0.0 turns -0.0 into 0.0
