"""Topo-Scan: a graph and a filtration -> an ordered sequence of topological tokens.

Thresholds a_0 < a_1 < ... < a_N are fitted on the pooled filtration values of the TRAINING
graphs (`fit_thresholds`). Slice i is the closed window [a_i, a_{i+m}], i = 0 .. N - m:

- node filtration f: the subgraph induced on {v : a_i <= f(v) <= a_{i+m}};
- edge filtration f: the subgraph made of {e : a_i <= f(e) <= a_{i+m}} and their endpoints.

Token i is ``(b0, b1, |V|, |E|)`` of the slice's flag complex over Z/2 with triangles filled
(`topoformer.homology`); an empty slice gives zeros. With the authors' N = 20 intervals and
m = 2 a filtration gives 19 tokens.

All windows of one graph are computed together: membership masks ``(T, n)`` / ``(T, m)``,
one union-find pass over the disjoint union of the T slices (rank d1, so b0), and GF(2)
elimination on rows packed into Python ints only for slices that hold a triangle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from shared_core.cli import phase
from topoformer.filtrations import check_filtration, filtration_values
from topoformer.graph import (
    Graph,
    as_graph,
    edge_ids,
    networkx_edge_ids,
    node_index,
    triangle_edge_ids,
)
from topoformer.homology import forest_ranks, pack_rows, rank_packed

Rule = Literal["frequent", "quantile"]
TOKEN_FIELDS = ("b0", "b1", "num_vertices", "num_edges")
"""The four entries of a token, in order."""


def _check_values(values: Any, name: str = "values") -> np.ndarray:
    try:
        f = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"{name}: expected numeric filtration values, got {values!r:.200}"
        ) from err
    if f.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of filtration values, got shape {f.shape}")
    if not np.all(np.isfinite(f)):
        bad = f[~np.isfinite(f)][0]
        raise ValueError(f"{name}: filtration values must be finite, got {bad}")
    return f


def input_values(obj: Any, g: Graph, values: Any, kind: str) -> np.ndarray:
    """Filtration values as given for `obj` -> ``(n,)`` / ``(m,)`` float64 in `g`'s order.

    An array follows the object's own order: a networkx graph's ``G.edges()`` order is
    mapped onto the sorted edge ids of `g`. A dict is keyed by node or by edge ``(u, v)``
    (either orientation), in the object's node names, and must cover every node (edge).
    """
    expect = g.num_nodes if kind == "node" else g.num_edges
    if isinstance(values, Mapping):
        index = node_index(obj)
        f = np.full(expect, np.nan)
        for key, val in values.items():
            try:
                if kind == "node":
                    k = index[key]
                else:
                    u, v = (index[x] for x in key)
                    k = int(edge_ids(g, np.array([u]), np.array([v]))[0])
                    if k >= g.num_edges or set(g.edges[k].tolist()) != {u, v}:
                        raise KeyError(key)
            except (KeyError, TypeError, ValueError):
                raise ValueError(f"values: key {key!r} is not a {kind} of this graph") from None
            f[k] = val
        if np.isnan(f).any():
            raise ValueError(
                f"values: the dict covers {int((~np.isnan(f)).sum())} of the {expect} "
                f"{kind}s of this graph; expected a value for every {kind}"
            )
        return _check_values(f)
    f = _check_values(values)
    if len(f) != expect:
        raise ValueError(f"values: expected {expect} {kind} values for this graph, got {len(f)}")
    ids = networkx_edge_ids(obj, g) if kind == "edge" else None
    if ids is not None:
        out = np.empty(expect)
        out[ids] = f
        return out
    return f


def fit_thresholds(
    values: Sequence[np.ndarray], n_intervals: int = 20, rule: Rule = "frequent"
) -> np.ndarray:
    """Dataset-global thresholds from the pooled filtration values of (training) graphs.

    ``rule="frequent"`` (the authors' ``process_thresholds``): a_0 = min, a_N = max, plus the
    ``n_intervals - 1`` most frequent other values (ties broken by first occurrence in the
    pooled order, as Python's stable sort of a `Counter` does), sorted. ``rule="quantile"``:
    the distinct values among the ``n_intervals + 1`` evenly spaced quantiles (rounded to 6
    decimals). Either gives at most ``n_intervals + 1`` thresholds, fewer when there are
    fewer distinct values.
    """
    if isinstance(n_intervals, bool) or not isinstance(n_intervals, int) or n_intervals < 2:
        raise ValueError(f"n_intervals: expected an int >= 2, got {n_intervals!r}")
    if rule not in ("frequent", "quantile"):
        raise ValueError(f"rule: expected 'frequent' or 'quantile', got {rule!r}")
    if len(values) == 0:
        raise ValueError("values: expected the filtration values of at least one graph, got none")
    pooled = np.concatenate([_check_values(v, f"values[{i}]") for i, v in enumerate(values)])
    if pooled.size == 0:
        raise ValueError("values: every graph has an empty filtration (no nodes or no edges)")
    lo, hi = pooled.min(), pooled.max()
    if rule == "quantile":
        q = np.quantile(pooled, np.linspace(0.0, 1.0, n_intervals + 1))
        return np.unique(np.round(q, 6))
    uniq, first, counts = np.unique(pooled, return_index=True, return_counts=True)
    inner = (uniq != lo) & (uniq != hi)
    uniq, first, counts = uniq[inner], first[inner], counts[inner]
    top = np.lexsort((first, -counts))[: n_intervals - 1]
    return np.unique(np.concatenate([[lo, hi], uniq[top]]))


def windows(thresholds: np.ndarray, m: int = 2) -> np.ndarray:
    """``(T, 2)`` closed windows [a_i, a_{i+m}], T = len(thresholds) - m."""
    a = np.asarray(thresholds, dtype=np.float64)
    if a.ndim != 1 or np.any(np.diff(a) <= 0):
        raise ValueError("thresholds: expected a strictly increasing 1-D array")
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ValueError(f"m: expected an int >= 1, got {m!r}")
    if len(a) <= m:
        raise ValueError(
            f"thresholds: {len(a)} thresholds give no window of width m = {m}; "
            "expected more than m (the filtration has too few distinct values)"
        )
    return np.stack([a[:-m], a[m:]], axis=1)


def scan(
    graph: Any,
    values: Any,
    thresholds: np.ndarray,
    m: int = 2,
    kind: str = "node",
    zero_edges_quirk: bool = False,
) -> np.ndarray:
    """The Topo-Scan sequence ``(T, 4)`` float64 of one graph: ``(b0, b1, |V|, |E|)`` per window.

    Args:
        graph: anything `as_graph` accepts.
        values: the filtration on the nodes (``kind="node"``) or edges (``kind="edge"``):
            an array in the order of the object passed (``G.nodes()`` / ``G.edges()`` for a
            networkx graph, node ids / ``Graph.edges`` otherwise), or a dict keyed by node
            (by edge ``(u, v)``, either orientation) in the same naming (`input_values`).
        thresholds: the fitted thresholds (`fit_thresholds`), strictly increasing.
        m: window width in thresholds.
        kind: ``"node"`` (induced subgraphs) or ``"edge"`` (edge subgraphs).
        zero_edges_quirk: reproduce the authors' published edge-filtration features: their
            notebook stores the curvature as the edge weight, ``nx.adjacency_matrix`` writes
            it into the matrix and pyflagser reads a 0 entry as "no edge", so an edge of
            value exactly 0 is counted in |V| and |E| but left out of the complex whose
            (b0, b1) are computed. Off by default (the method as described).
    """
    g = as_graph(graph)
    win = windows(thresholds, m)
    if kind not in ("node", "edge"):
        raise ValueError(f"kind: expected 'node' or 'edge', got {kind!r}")
    f = input_values(graph, g, values, kind)
    inside = (win[:, :1] <= f[None, :]) & (f[None, :] <= win[:, 1:])  # (T, n) or (T, m)
    e = g.edges
    if kind == "node":
        vmask = inside
        emask = vmask[:, e[:, 0]] & vmask[:, e[:, 1]]
    else:
        emask = inside
        vmask = np.zeros((len(win), g.num_nodes), dtype=bool)
        for col in (0, 1):
            np.logical_or.at(vmask.T, e[:, col], emask.T)
        if zero_edges_quirk:
            return _tokens(g, vmask, emask, emask & (f != 0.0)[None, :])
    return _tokens(g, vmask, emask)


def _tokens(
    g: Graph, vmask: np.ndarray, emask: np.ndarray, hmask: np.ndarray | None = None
) -> np.ndarray:
    """Tokens from vertex and edge masks; `hmask` (default `emask`): edges of the complex."""
    t_windows, n = vmask.shape
    nv, ne = vmask.sum(1), emask.sum(1)
    emask = emask if hmask is None else hmask
    nh = emask.sum(1)
    # rank d1 of every slice in one union-find pass: slice i's copy of node v is i * n + v
    wi, ek = np.nonzero(emask)
    rank1 = forest_ranks(t_windows, wi, wi * n + g.edges[ek, 0], wi * n + g.edges[ek, 1])
    rank2 = np.zeros(t_windows, dtype=np.int64)
    ids = triangle_edge_ids(g)
    if len(ids):
        tmask = emask[:, ids[:, 0]] & emask[:, ids[:, 1]] & emask[:, ids[:, 2]]  # (T, t)
        tw, tk = np.nonzero(tmask)
        if len(tw):
            rows = pack_rows(ids)
            ends = np.cumsum(np.bincount(tw, minlength=t_windows)).tolist()
            tk_list = tk.tolist()
            start = 0
            for i, end in enumerate(ends):
                if end > start:
                    rank2[i] = rank_packed([rows[k] for k in tk_list[start:end]])
                start = end
    b0 = nv - rank1
    b1 = nh - rank1 - rank2
    return np.stack([b0, b1, nv, ne], axis=1).astype(np.float64)


@dataclass
class FilteredGraph:
    """A graph with its filtration values computed once: ``values[name]`` per filtration."""

    graph: Graph
    values: dict[str, np.ndarray] = field(default_factory=dict)


def filter_graphs(graphs: Sequence[Any], filtrations: Sequence[str]) -> list[FilteredGraph]:
    """Compute every filtration of every graph once (Ollivier-Ricci is the costly one)."""
    names = [str(name) for name in filtrations]
    for name in names:
        check_filtration(name)
    out = []
    for i, obj in enumerate(graphs):
        try:
            g = as_graph(obj)
        except (TypeError, ValueError) as err:
            raise type(err)(f"graphs[{i}]: {err}") from None
        out.append(FilteredGraph(g, {name: filtration_values(g, name) for name in names}))
        phase(f"filtrations {'+'.join(names)}: {i + 1}/{len(graphs)} graphs", announce=False)
    return out


class TopoScan(TransformerMixin, BaseEstimator):  # type: ignore[misc]
    """Thresholds fitted on training graphs (`fit`), then token sequences of any graph.

    A scikit-learn transformer: ``get_params``/``set_params``, ``clone``, ``Pipeline`` and
    ``GridSearchCV`` work. ``X`` is a sequence of graphs (networkx graphs, `Graph`, TU or
    molecular graphs, `FilteredGraph`), not a numeric matrix. ``transform`` never refits: test
    graphs are scanned with the training thresholds. It returns ``{filtration: (num_graphs,
    T_f, 4) float64}``, or with ``flatten=True`` one ``(num_graphs, sum_f T_f * 4)`` matrix
    (filtrations in order, tokens in order, fields ``b0, b1, |V|, |E|``) for a downstream
    estimator. Parameters are checked in `fit` (scikit-learn's convention).
    """

    def __init__(
        self,
        filtrations: tuple[str, ...] = ("ricci", "hks"),  # the paper's graph-classification pair
        n_intervals: int = 20,  # N: a_0 = min, a_N = max and N - 1 frequent values
        m: int = 2,  # window width: slice i is [a_i, a_{i+m}]
        rule: Rule = "frequent",  # the authors' code; "quantile" is the folder name's reading
        zero_edges_quirk: bool = False,  # True: the authors' published edge features (`scan`)
        flatten: bool = False,
    ) -> None:
        self.filtrations = filtrations
        self.n_intervals = n_intervals
        self.m = m
        self.rule = rule
        self.zero_edges_quirk = zero_edges_quirk
        self.flatten = flatten

    def _validate(self) -> None:
        if isinstance(self.filtrations, str) or len(self.filtrations) == 0:
            raise ValueError(
                f"filtrations: expected a non-empty tuple of names, got {self.filtrations!r}"
            )
        for name in self.filtrations:
            check_filtration(name)
        if isinstance(self.m, bool) or not isinstance(self.m, int) or self.m < 1:
            raise ValueError(f"m: expected an int >= 1, got {self.m!r}")
        if self.rule not in ("frequent", "quantile"):
            raise ValueError(f"rule: expected 'frequent' or 'quantile', got {self.rule!r}")

    def _filtered(self, graphs: Sequence[Any]) -> list[FilteredGraph]:
        if isinstance(graphs, np.ndarray) and graphs.dtype != object:
            raise ValueError(
                f"X: expected a sequence of graphs (networkx, Graph, TU or molecular graphs), "
                f"got a numeric array of shape {graphs.shape}"
            )
        if isinstance(graphs, (str, bytes)) or not isinstance(graphs, Sequence | np.ndarray):
            raise TypeError(f"X: expected a sequence of graphs, got {type(graphs).__name__}")
        if all(isinstance(g, FilteredGraph) for g in graphs):
            missing = {n for g in graphs for n in self.filtrations if n not in g.values}
            if missing:
                raise ValueError(f"graphs: FilteredGraph lacks the filtrations {sorted(missing)}")
            return list(graphs)
        return filter_graphs(graphs, self.filtrations)

    def fit(self, X: Sequence[Any], y: Any = None) -> TopoScan:
        """Fit the thresholds of every filtration on the graphs `X` (the training graphs)."""
        self._validate()
        fg = self._filtered(X)
        if not fg:
            raise ValueError("graphs: expected at least one training graph, got none")
        thresholds = {}
        for name in self.filtrations:
            th = fit_thresholds([g.values[name] for g in fg], self.n_intervals, self.rule)
            windows(th, self.m)  # fail now if too few distinct values
            thresholds[name] = th
        self.thresholds_ = thresholds
        return self

    def num_tokens(self) -> dict[str, int]:
        """T_f = len(thresholds) - m per filtration (after `fit`)."""
        self._check_fitted()
        return {name: len(th) - self.m for name, th in self.thresholds_.items()}

    def _check_fitted(self) -> None:
        if not getattr(self, "thresholds_", None):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("TopoScan: call fit(training_graphs) before transform")

    def __sklearn_is_fitted__(self) -> bool:
        return bool(getattr(self, "thresholds_", None))

    def transform(self, X: Sequence[Any]) -> Any:
        """Token sequences ``{name: (num_graphs, T_f, 4)}`` with the fitted thresholds (or
        their ``(num_graphs, sum T_f * 4)`` concatenation when ``flatten``)."""
        self._check_fitted()
        fg = self._filtered(X)
        out = {}
        for name in self.filtrations:
            kind = check_filtration(name)
            th = self.thresholds_[name]
            seqs = [
                scan(g.graph, g.values[name], th, self.m, kind, self.zero_edges_quirk) for g in fg
            ]
            out[name] = np.stack(seqs) if seqs else np.zeros((0, len(th) - self.m, 4))
        if self.flatten:
            return np.concatenate([out[n].reshape(len(fg), -1) for n in self.filtrations], 1)
        return out

    def fit_transform(self, X: Sequence[Any], y: Any = None, **fit_params: Any) -> Any:
        fg = self._filtered(X)
        return self.fit(fg).transform(fg)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """``"<filtration>_<token>_<field>"`` for each column of the flattened output."""
        tokens = self.num_tokens()
        return np.array([
            f"{name}_{t}_{f}" for name in self.filtrations for t in range(tokens[name])
            for f in TOKEN_FIELDS
        ], dtype=object)  # fmt: skip


def minmax_scale(sequences: np.ndarray) -> np.ndarray:
    """The authors' molecular-task scaling: each graph's tokens to [0, 1] per feature over
    its T slices, ``(x - min) / (max - min + 1e-8)`` (``module.min_max_scaling``)."""
    x = np.asarray(sequences, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"sequences: expected shape (graphs, T, features), got {x.shape}")
    lo, hi = x.min(1, keepdims=True), x.max(1, keepdims=True)
    return (x - lo) / (hi - lo + 1e-8)
