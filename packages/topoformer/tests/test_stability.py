"""The stability statement of `topoformer.stability`, checked empirically."""

from __future__ import annotations

import networkx as nx
import numpy as np
from topoformer.filtrations import filtration_values
from topoformer.graph import as_graph
from topoformer.stability import stability_bound, threshold_crossings
from topoformer.topo_scan import TopoScan, scan


def test_small_perturbations_away_from_thresholds_leave_tokens_unchanged(random_graphs):
    rng = np.random.default_rng(0)
    for G in random_graphs:
        g = as_graph(G)
        f = rng.uniform(0, 1, g.num_nodes)
        th = np.sort(rng.uniform(0, 1, 8))
        gap = np.diff(th).min() / 2
        away = np.abs(f[:, None] - th[None, :]).min()
        delta = 0.99 * min(gap, away)
        f2 = f + rng.uniform(-delta, delta, g.num_nodes)
        assert not threshold_crossings(f, f2, th).any()
        np.testing.assert_array_equal(scan(g, f, th), scan(g, f2, th))


def test_the_l1_bound_holds_for_node_and_edge_perturbations(mutag):
    graphs, _ = mutag
    rng = np.random.default_rng(1)
    scanner = TopoScan(("degree", "ricci")).fit(graphs)
    for g in graphs[:60]:
        for name, kind in (("degree", "node"), ("ricci", "edge")):
            f = filtration_values(g, name)
            if len(f) == 0:
                continue
            th = scanner.thresholds_[name]
            f2 = f.copy()
            moved = rng.random(len(f)) < 0.3
            f2[moved] += rng.normal(0, 0.05 if kind == "node" else 0.3, moved.sum())
            change = np.abs(scan(g, f, th, 2, kind) - scan(g, f2, th, 2, kind)).sum()
            by_windows, by_crossings = stability_bound(g, f, f2, th, 2, kind)
            assert change <= by_windows <= by_crossings


def test_one_vertex_leaving_a_slice_stays_within_the_node_bound():
    g = as_graph(nx.path_graph(3))  # middle vertex of degree 2 moves out of the only window
    f = np.array([0.5, 0.5, 0.5])
    f2 = np.array([0.5, 5.0, 0.5])
    th = np.array([0.0, 0.25, 1.0])
    change = np.abs(scan(g, f, th) - scan(g, f2, th)).sum()
    by_windows, _ = stability_bound(g, f, f2, th)
    assert change == 1 + 2 + 1 + 0  # |V| 3 -> 2, |E| 2 -> 0, b0 1 -> 2, b1 0 -> 0
    assert change <= by_windows == 1 + 2 + max(1, 1) + max(2, 0)


def test_bad_inputs_raise():
    import pytest
    from topoformer.stability import token_change_bound

    g = as_graph(nx.path_graph(3))
    th = np.array([0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="expected 3 node values"):
        stability_bound(g, np.zeros(2), np.zeros(2), th)
    with pytest.raises(ValueError, match="equal-length"):
        threshold_crossings(np.zeros(2), np.zeros(3), th)
    with pytest.raises(ValueError, match="kind"):
        token_change_bound(g, "face")
