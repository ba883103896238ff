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
    from sklearn.exceptions import NotFittedError

    with pytest.raises(ValueError, match="filtration"):
        TopoScan(("degree", "pagerank")).fit([g])  # checked in fit (scikit-learn's convention)
    with pytest.raises(ValueError, match="filtrations"):
        TopoScan("degree").fit([g])  # type: ignore[arg-type]
    with pytest.raises(NotFittedError, match="fit"):
        TopoScan().transform([g])


def _shuffled_networkx(seed: int) -> nx.Graph:
    """A graph whose node names and edge insertion order are shuffled, so that networkx's
    ``G.edges()`` order differs from the package's sorted edge order."""
    rng = np.random.default_rng(seed)
    base = nx.gnp_random_graph(14, 0.4, seed=seed)
    names = [f"v{k}" for k in rng.permutation(base.number_of_nodes())]
    G = nx.Graph()
    G.add_nodes_from(names[k] for k in rng.permutation(base.number_of_nodes()))
    edges = list(base.edges())
    for k in rng.permutation(len(edges)):
        u, v = edges[k]
        G.add_edge(names[v], names[u]) if k % 2 else G.add_edge(names[u], names[v])
    return G


@pytest.mark.parametrize("seed", range(3))
def test_edge_values_in_networkx_order_give_the_sorted_order_tokens(seed):
    G = _shuffled_networkx(seed)
    g = as_graph(G)
    nodes = list(G.nodes())
    rng = np.random.default_rng(seed)
    value = {frozenset(e): float(rng.integers(0, 6)) for e in G.edges()}
    in_nx = np.array([value[frozenset(e)] for e in G.edges()])
    in_sorted = np.array([value[frozenset((nodes[i], nodes[j]))] for i, j in g.edges.tolist()])
    assert not np.array_equal(in_nx, in_sorted)  # the two orders really differ
    th = fit_thresholds([in_sorted], 6)
    want = scan(g, in_sorted, th, 2, "edge")
    np.testing.assert_array_equal(scan(G, in_nx, th, 2, "edge"), want)
    by_edge = {(v, u) if k % 2 else (u, v): value[frozenset((u, v))]
               for k, (u, v) in enumerate(G.edges())}  # fmt: skip
    np.testing.assert_array_equal(scan(G, by_edge, th, 2, "edge"), want)
    vals = {tuple(e): in_sorted[k] for k, e in enumerate(g.edges.tolist())}
    relabelled = nx.relabel_nodes(G, {v: i for i, v in enumerate(nodes)})
    np.testing.assert_array_equal(want, reference_scan(relabelled, vals, th, 2, "edge"))


def test_ricci_of_a_networkx_graph_comes_in_its_edge_order():
    G = _shuffled_networkx(7)
    g = as_graph(G)
    r_nx, r_sorted = filtration_values(G, "ricci"), filtration_values(g, "ricci")
    assert sorted(r_nx.tolist()) == sorted(r_sorted.tolist())
    th = fit_thresholds([r_sorted], 8)
    np.testing.assert_array_equal(scan(G, r_nx, th, 2, "edge"), scan(g, r_sorted, th, 2, "edge"))


def test_networkx_node_labels_give_the_molgraph_label_tokens():
    from shared_core.data import mol_graph

    for smiles in ("c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "C1CC2CCC1C2Cl", "OCC(O)CO"):
        mol = mol_graph(smiles)
        G = nx.Graph()
        order = np.random.default_rng(len(smiles)).permutation(len(mol.atoms))
        for i in order:  # shuffled insertion order: labels must follow their nodes
            G.add_node(int(i), atomic_num=int(mol.atoms[i][0]))
        G.add_edges_from(np.asarray(mol.edge_index).T.tolist())
        g_nx = as_graph(G, label_attr="atomic_num")
        g_mol = as_graph(mol)
        for name in ("label", "atomic_weight"):
            f_mol = filtration_values(g_mol, name)
            th = fit_thresholds([f_mol], 6)
            if len(th) <= 2:
                continue
            want = scan(g_mol, f_mol, th, 2, "node")
            f_nx = filtration_values(g_nx, name)
            perm = np.array(list(G.nodes()))  # node k of g_nx is atom perm[k]
            np.testing.assert_array_equal(f_nx, f_mol[perm])
            np.testing.assert_array_equal(scan(g_nx, f_nx, th, 2, "node"), want)


def test_networkx_input_errors_name_the_argument():
    G = nx.path_graph(4)
    with pytest.raises(ValueError, match="directed"):
        as_graph(nx.DiGraph([(0, 1), (1, 2)]))
    with pytest.raises(ValueError, match="directed"):
        scan(nx.DiGraph([(0, 1), (1, 2)]), [0.0, 1.0, 2.0], np.arange(4.0))
    with pytest.raises(ValueError, match="label_attr"):
        as_graph(G, label_attr="atomic_num")
    nx.set_node_attributes(G, "C", "sym")
    with pytest.raises(TypeError, match="label_attr"):
        as_graph(G, label_attr="sym")
    with pytest.raises(TypeError, match="label_attr"):
        as_graph((2, np.array([[0], [1]])), label_attr="x")
    with pytest.raises(ValueError, match="needs node labels"):
        filtration_values(G, "label")
    th = np.arange(5.0)
    with pytest.raises(ValueError, match="not a edge"):
        scan(G, {(0, 1): 1.0, (0, 2): 2.0, (2, 3): 3.0}, th, 2, "edge")
    with pytest.raises(ValueError, match="covers 2 of the 3"):
        scan(G, {(0, 1): 1.0, (2, 1): 2.0}, th, 2, "edge")
