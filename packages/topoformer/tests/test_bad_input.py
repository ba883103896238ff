"""Bad input to the public API, in one table: each case raises a ValueError/TypeError naming
the argument (issue 46's probes: a directed networkx graph was accepted without a word, a
batch of one graph in train mode raised BatchNorm's error, `scan(kind="edge")` silently read
values in the package's sorted edge order, and `as_graph` dropped a networkx graph's node
labels)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from topoformer import (
    TopoFormer,
    TopoFormerConfig,
    TopoScan,
    TopoSequenceEncoder,
    as_graph,
    filtration_values,
    fit_thresholds,
    flag_betti,
    gf2_rank,
    heat_kernel_signature,
    inner_split,
    kfold,
    make_graph,
    minmax_scale,
    scan,
    select,
    stability_bound,
    threshold_crossings,
    token_change_bound,
    windows,
)

from shared_core.testing import assert_bad_input

_TRI = make_graph(3, np.array([[0, 1, 2], [1, 2, 0]]))
_TH = np.linspace(0.0, 1.0, 5)
_DIRECTED = nx.DiGraph([(0, 1), (1, 2)])
_NX = nx.Graph([("a", "b"), ("b", "c")])
nx.set_node_attributes(_NX, {"a": 6, "b": 8, "c": 6}, "z")
_ENC = TopoSequenceEncoder(3, TopoFormerConfig(d_model=8, n_heads=2, dim_feedforward=16))
_MODEL = TopoFormer([3], 2, TopoFormerConfig(d_model=8, n_heads=2, dim_feedforward=16))
_TOKENS = torch.rand(4, 3, 4)

CASES = {
    # graphs
    "directed networkx graph": (lambda: as_graph(_DIRECTED), ValueError, "graph"),
    "directed graph to scan": (lambda: scan(_DIRECTED, [0.1, 0.2, 0.3], _TH), ValueError, "graph"),
    "a string as a graph": (lambda: as_graph("C1CC1"), TypeError, "graph"),
    "missing label attribute": (lambda: as_graph(_NX, label_attr="q"), ValueError, "label_attr"),
    "label attribute of floats": (
        lambda: as_graph(_float_labelled(), label_attr="w"),
        TypeError,
        "label_attr",
    ),
    "label_attr on a non-networkx graph": (
        lambda: as_graph((3, [[0], [1]]), "z"),
        TypeError,
        "label_attr",
    ),
    "zero nodes": (lambda: make_graph(0, np.zeros((2, 0), int)), ValueError, "num_nodes"),
    "float node count": (lambda: make_graph(2.0, [[0], [1]]), TypeError, "num_nodes"),
    "edge_index of the wrong shape": (lambda: make_graph(3, [[0, 1, 2]]), ValueError, "edge_index"),
    "edge_index out of range": (lambda: make_graph(3, [[0], [5]]), ValueError, "edge_index", "5"),
    "float edge_index": (lambda: make_graph(3, [[0.0], [1.0]]), TypeError, "edge_index"),
    "self-loop": (lambda: make_graph(3, [[1], [1]]), ValueError, "edge_index"),
    "node_labels of the wrong length": (
        lambda: make_graph(3, [[0], [1]], [1, 2]),
        ValueError,
        "node_labels",
    ),
    "float node_labels": (lambda: make_graph(2, [[0], [1]], [1.5, 2.5]), TypeError, "node_labels"),
    # filtrations
    "unknown filtration": (lambda: filtration_values(_TRI, "zzz"), ValueError, "filtration", "zzz"),
    "label filtration without labels": (
        lambda: filtration_values(_TRI, "label"),
        ValueError,
        "filtration",
    ),
    "NaN diffusion time": (lambda: heat_kernel_signature(_TRI, float("nan")), ValueError, "t"),
    "zero diffusion time": (lambda: heat_kernel_signature(_TRI, 0.0), ValueError, "t"),
    # Topo-Scan
    "NaN node value": (lambda: scan(_TRI, [0.1, np.nan, 0.3], _TH), ValueError, "values"),
    "inf node value": (lambda: scan(_TRI, [0.1, np.inf, 0.3], _TH), ValueError, "values"),
    "too few node values": (lambda: scan(_TRI, [0.1, 0.2], _TH), ValueError, "values"),
    "2-D values": (lambda: scan(_TRI, [[0.1, 0.2, 0.3]], _TH), ValueError, "values"),
    "string values": (lambda: scan(_TRI, ["a", "b", "c"], _TH), ValueError, "values"),
    "edge values in a dict missing an edge": (
        lambda: scan(_NX, {("a", "b"): 0.5}, _TH, kind="edge"),
        ValueError,
        "values",
    ),
    "dict key that is no edge": (
        lambda: scan(_NX, {("a", "c"): 0.5, ("a", "b"): 0.1}, _TH, kind="edge"),
        ValueError,
        "values",
    ),
    "unknown scan kind": (
        lambda: scan(_TRI, [0.1, 0.2, 0.3], _TH, kind="face"),
        ValueError,
        "kind",
    ),
    "decreasing thresholds": (
        lambda: scan(_TRI, [0.1, 0.2, 0.3], _TH[::-1]),
        ValueError,
        "thresholds",
    ),
    "too few thresholds": (lambda: windows(np.array([0.0, 1.0]), 2), ValueError, "thresholds"),
    "zero window width": (lambda: windows(_TH, 0), ValueError, "m"),
    "fit on no graphs": (lambda: fit_thresholds([]), ValueError, "values"),
    "fit on NaN values": (lambda: fit_thresholds([np.array([np.nan])]), ValueError, "values[0]"),
    "one interval": (lambda: fit_thresholds([np.arange(5.0)], 1), ValueError, "n_intervals"),
    "unknown threshold rule": (
        lambda: fit_thresholds([np.arange(5.0)], rule="zzz"),
        ValueError,
        "rule",
    ),
    "TopoScan with a string of filtrations": (
        lambda: TopoScan(filtrations="ricci").fit([]),
        ValueError,
        "filtrations",
    ),
    "TopoScan with an unknown filtration": (
        lambda: TopoScan(filtrations=("zzz",)).fit([]),
        ValueError,
        "filtration",
    ),
    "TopoScan fit on no graphs": (lambda: TopoScan(("degree",)).fit([]), ValueError, "graphs"),
    "minmax of 2-D tokens": (lambda: minmax_scale(np.zeros((3, 4))), ValueError, "sequences"),
    # homology
    "gf2 rank of float rows": (lambda: gf2_rank(np.zeros((1, 3)), 3), TypeError, "rows"),
    "gf2 rank column out of range": (
        lambda: gf2_rank(np.array([[0, 7]]), 3),
        ValueError,
        "rows",
        "7",
    ),
    "gf2 rank negative columns": (
        lambda: gf2_rank(np.zeros((0, 3), int), -1),
        ValueError,
        "num_columns",
    ),
    "betti of negative nodes": (
        lambda: flag_betti(-1, np.zeros((0, 2), int)),
        ValueError,
        "num_nodes",
    ),
    "betti of edges (m, 3)": (lambda: flag_betti(3, np.zeros((2, 3), int)), ValueError, "edges"),
    # stability
    "crossings of unequal lengths": (
        lambda: threshold_crossings([0.1, 0.2], [0.1], _TH),
        ValueError,
        "f2",
    ),
    "token bound of an unknown kind": (
        lambda: token_change_bound(_TRI, "face"),
        ValueError,
        "kind",
    ),
    "stability of too few values": (
        lambda: stability_bound(_TRI, [0.1, 0.2], [0.1, 0.2], _TH),
        ValueError,
        "f",
    ),
    # protocol
    "one fold": (lambda: kfold(10, 1), ValueError, "n_folds"),
    "more folds than samples": (lambda: kfold(3, 5), ValueError, "n"),
    "validation fraction 1": (
        lambda: inner_split(np.arange(10), None, 1.0, 0),
        ValueError,
        "val_fraction",
    ),
    "select of unequal lengths": (lambda: select([0.1, 0.2], [0.3]), ValueError, "val"),
    "select of nothing": (lambda: select([], []), ValueError, "val"),
    "select of NaN scores": (lambda: select([np.nan, 0.2], [0.3, 0.4]), ValueError, "val"),
    # model
    "batch of one in train mode": (lambda: _MODEL.train()([_TOKENS[:1]]), ValueError, "sequences"),
    "encoder batch of one in train mode": (lambda: _ENC.train()(_TOKENS[:1]), ValueError, "tokens"),
    "tokens of the wrong length": (lambda: _ENC(torch.rand(4, 5, 4)), ValueError, "tokens"),
    "NaN tokens": (lambda: _MODEL.eval()([_TOKENS * np.nan]), ValueError, "sequences"),
    "integer tokens": (lambda: _MODEL.eval()([_TOKENS.long()]), TypeError, "sequences"),
    "two sequences for one filtration": (
        lambda: _MODEL([_TOKENS, _TOKENS]),
        ValueError,
        "sequences",
    ),
    "heads not dividing d_model": (
        lambda: TopoFormerConfig(d_model=10, n_heads=3),
        ValueError,
        "n_heads",
    ),
    "dropout 1": (lambda: TopoFormerConfig(dropout=1.0), ValueError, "dropout"),
    "no filtration": (lambda: TopoFormer([], 2), ValueError, "num_tokens"),
    "zero outputs": (lambda: TopoFormer([3], 0), ValueError, "num_outputs"),
}


def _float_labelled() -> nx.Graph:
    g = nx.Graph([(0, 1)])
    nx.set_node_attributes(g, {0: 1.5, 1: 2.5}, "w")
    return g


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])


def test_edge_values_follow_networkx_order() -> None:
    """Issue 46: `scan(kind="edge")` expected the package's sorted edge order; an array follows
    ``G.edges()`` and a dict keyed by edge gives the same tokens."""
    g = nx.Graph([(2, 0), (0, 1), (1, 2), (2, 3)])
    values = dict(zip(g.edges(), [0.1, 0.9, 0.5, 0.3], strict=True))
    by_array = scan(g, list(values.values()), _TH, kind="edge")
    by_dict = scan(g, values, _TH, kind="edge")
    np.testing.assert_array_equal(by_array, by_dict)


def test_as_graph_keeps_networkx_node_labels() -> None:
    """Issue 46: `as_graph(networkx)` dropped node labels; `label_attr` reads them."""
    np.testing.assert_array_equal(as_graph(_NX, label_attr="z").node_labels, [6, 8, 6])
