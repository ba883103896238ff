"""Topo-Scan: the reference, gudhi per slice, invariances, thresholds, the authors' features."""

from __future__ import annotations

import os
from collections import Counter

import networkx as nx
import numpy as np
import pytest
from topoformer.filtrations import filtration_values
from topoformer.graph import as_graph
from topoformer.reference import reference_scan, reference_thresholds
from topoformer.topo_scan import TopoScan, fit_thresholds, minmax_scale, scan, windows


def test_scan_matches_the_networkx_reference(random_graphs):
    checked = 0
    for G in random_graphs:
        g = as_graph(G)
        f = filtration_values(g, "degree")
        th = fit_thresholds([f], 6)
        if len(th) > 2:
            got = scan(g, f, th, 2, "node")
            np.testing.assert_array_equal(got, reference_scan(G, dict(enumerate(f)), th, 2, "node"))
            checked += 1
        r = filtration_values(g, "ricci")
        if len(np.unique(r)) > 2:
            th = fit_thresholds([r], 6)
            vals = {tuple(e): r[k] for k, e in enumerate(g.edges.tolist())}
            np.testing.assert_array_equal(
                scan(g, r, th, 2, "edge"), reference_scan(G, vals, th, 2, "edge")
            )
            checked += 1
    assert checked >= 15


def test_slices_of_mutag_match_gudhi_and_components(mutag):
    import gudhi

    graphs, _ = mutag
    scanner = TopoScan(("degree",)).fit(graphs)
    th = scanner.thresholds_["degree"]
    win = windows(th, 2)
    for g in graphs[:40]:
        f = filtration_values(g, "degree")
        seq = scan(g, f, th, 2, "node")
        G = nx.Graph(g.edges.tolist())
        G.add_nodes_from(range(g.num_nodes))
        for (lo, hi), tok in zip(win, seq, strict=True):
            sub = G.subgraph([v for v in range(g.num_nodes) if lo <= f[v] <= hi])
            st = gudhi.SimplexTree()
            for v in sub.nodes():
                st.insert([v])
            for u, v in sub.edges():
                st.insert([u, v])
            st.expansion(2)
            st.compute_persistence(persistence_dim_max=True)
            b = [*st.betti_numbers(), 0, 0]
            assert (tok[0], tok[1]) == (b[0], b[1])
            assert tok[0] == nx.number_connected_components(sub)
            assert (tok[2], tok[3]) == (sub.number_of_nodes(), sub.number_of_edges())


def test_reproduces_the_authors_published_mutag_features(mutag, data_dir):
    """Thresholds on all 188 graphs (as the notebooks do); the Ricci features match only with
    the zero-weight quirk of their notebook (see `scan`)."""
    graphs, _ = mutag
    want = np.load(os.path.join(data_dir, "authors_mutag.npz"))
    from topoformer.topo_scan import filter_graphs

    filtered = filter_graphs(graphs, ("degree", "ricci"))  # Ricci curvature computed once
    quirk = TopoScan(("degree", "ricci"), zero_edges_quirk=True).fit_transform(filtered)
    np.testing.assert_array_equal(quirk["degree"], want["degree"])
    np.testing.assert_array_equal(quirk["ricci"], want["ricci"])
    plain = TopoScan(("degree", "ricci")).fit_transform(filtered)
    np.testing.assert_array_equal(plain["degree"], want["degree"])
    assert np.any(plain["ricci"] != want["ricci"])  # zero-curvature edges now close cycles
    np.testing.assert_array_equal(plain["ricci"][..., 2:], want["ricci"][..., 2:])  # |V|, |E|


def test_tokens_are_invariant_to_node_relabelling(random_graphs):
    rng = np.random.default_rng(1)
    for G in random_graphs:
        g = as_graph(G)
        if g.num_edges < 3:
            continue
        h = g.relabel(rng.permutation(g.num_nodes))
        scanner = TopoScan(("degree", "ricci", "hks")).fit([g])
        a, b = scanner.transform([g]), scanner.transform([h])
        for name in a:
            np.testing.assert_allclose(a[name], b[name], err_msg=name)


def test_a_window_covering_everything_gives_the_whole_graph(random_graphs):
    from topoformer.homology import flag_betti

    for G in random_graphs:
        g = as_graph(G)
        f = filtration_values(g, "degree")
        th = np.array([f.min() - 1.0, f.min() - 0.5, f.max() + 1.0])
        b = flag_betti(g.num_nodes, g.edges)
        np.testing.assert_array_equal(
            scan(g, f, th, 2, "node")[0], [b[0], b[1], g.num_nodes, g.num_edges]
        )


def test_empty_windows_give_zeros():
    g = as_graph(nx.path_graph(5))
    f = np.zeros(5)
    seq = scan(g, f, np.array([1.0, 2.0, 3.0, 4.0]), 2, "node")
    np.testing.assert_array_equal(seq, np.zeros((2, 4)))


def test_thresholds_follow_the_authors_rule_with_ties():
    rng = np.random.default_rng(3)
    for n in (3, 5, 20):
        pooled = [
            np.round(rng.integers(0, 30, size=int(rng.integers(5, 40))) / 29, 6) for _ in range(6)
        ]
        got = fit_thresholds(pooled, n)
        want = reference_thresholds(list(np.concatenate(pooled)), n)
        np.testing.assert_array_equal(got, want)


def test_thresholds_are_sorted_and_hold_the_training_min_and_max():
    rng = np.random.default_rng(4)
    vals = [rng.normal(size=30).round(6) for _ in range(4)]
    for rule in ("frequent", "quantile"):
        th = fit_thresholds(vals, 20, rule)  # type: ignore[arg-type]
        pooled = np.concatenate(vals)
        assert np.all(np.diff(th) > 0)
        assert th[0] == pooled.min() and th[-1] == pooled.max()
        assert len(th) <= 21


def test_frequent_rule_keeps_the_most_frequent_values():
    pooled = [np.array([0.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.75])]
    np.testing.assert_array_equal(fit_thresholds(pooled, 3), [0.0, 0.25, 0.5, 1.0])
    assert Counter(pooled[0].tolist()).most_common(1)[0][0] == 0.5


def test_transform_never_refits_on_test_graphs(random_graphs):
    train, test = random_graphs[:10], [nx.complete_graph(12), nx.star_graph(20)]
    scanner = TopoScan(("degree",)).fit(train)
    before = scanner.thresholds_["degree"].copy()
    out = scanner.transform(test)["degree"]
    np.testing.assert_array_equal(scanner.thresholds_["degree"], before)
    for G, seq in zip(test, out, strict=True):
        g = as_graph(G)
        np.testing.assert_array_equal(
            seq, scan(g, filtration_values(g, "degree"), before, 2, "node")
        )


def test_nineteen_tokens_with_the_authors_defaults(mutag):
    graphs, _ = mutag
    scanner = TopoScan(("degree",)).fit(graphs)
    assert scanner.num_tokens() == {"degree": 19}
    assert len(scanner.thresholds_["degree"]) == 21


def test_minmax_scale_maps_each_graph_feature_to_unit_range():
    x = np.random.default_rng(0).integers(0, 9, size=(3, 7, 4)).astype(float)
    y = minmax_scale(x)
    assert y.min() >= 0 and y.max() <= 1
    np.testing.assert_allclose(y.max(1)[x.max(1) > x.min(1)], 1.0, atol=1e-6)


def test_bad_inputs_raise():
    g = as_graph(nx.path_graph(4))
    th = np.array([0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="finite"):
        scan(g, np.array([0.1, np.nan, 0.2, 0.3]), th)
    with pytest.raises(ValueError, match="expected 4 node values"):
        scan(g, np.zeros(3), th)
    with pytest.raises(ValueError, match="kind"):
        scan(g, np.zeros(4), th, kind="face")
    with pytest.raises(ValueError, match="strictly increasing"):
        scan(g, np.zeros(4), np.array([1.0, 0.0, 2.0]))
    with pytest.raises(ValueError, match="no window"):
        scan(g, np.zeros(4), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="n_intervals"):
        fit_thresholds([np.zeros(3)], 1)
    with pytest.raises(ValueError, match="rule"):
        fit_thresholds([np.zeros(3)], 4, "median")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        fit_thresholds([np.array([0.0, np.inf])], 4)
    with pytest.raises(ValueError, match="filtration"):
        TopoScan(("degree", "pagerank"))
    with pytest.raises(ValueError, match="filtrations"):
        TopoScan("degree")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="fit"):
        TopoScan().transform([g])
