"""Filtration functions; Ollivier-Ricci against GraphRicciCurvature's values and closed forms."""

from __future__ import annotations

import json
import os

import networkx as nx
import numpy as np
import pytest
from topoformer.filtrations import (
    degree_centrality,
    filtration_values,
    heat_kernel_signature,
    ollivier_ricci,
)  # fmt: skip
from topoformer.graph import as_graph, make_graph
from topoformer.reference import reference_ollivier_ricci


def test_ricci_matches_graphricci_curvature_golden_values(data_dir):
    with open(os.path.join(data_dir, "orc_golden.json")) as fh:
        golden = json.load(fh)
    assert len(golden) >= 9
    for name, case in golden.items():
        e = np.asarray(case["edges"]).T
        g = make_graph(case["num_nodes"], e)
        idx = np.searchsorted(g.edges[:, 0] * g.num_nodes + g.edges[:, 1],
                              np.minimum(*e) * g.num_nodes + np.maximum(*e))  # fmt: skip
        w = None
        if "weights" in case:
            w = np.empty(len(idx))
            w[idx] = case["weights"]
        ours = ollivier_ricci(g, weights=w)[idx]
        np.testing.assert_allclose(ours, case["curvature"], atol=1e-9, err_msg=name)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_ricci_of_complete_graph_is_n_over_2_n_minus_1(n):
    k = ollivier_ricci(as_graph(nx.complete_graph(n)))
    np.testing.assert_allclose(k, n / (2 * (n - 1)), atol=1e-12)


@pytest.mark.parametrize("leaves", [1, 2, 4, 7])
def test_ricci_of_star_edges_is_one_over_leaves(leaves):
    np.testing.assert_allclose(
        ollivier_ricci(as_graph(nx.star_graph(leaves))), 1 / leaves, atol=1e-12
    )


@pytest.mark.parametrize(("n", "kappa"), [(3, 0.75), (4, 0.5), (5, 0.25), (6, 0.0), (9, 0.0)])
def test_ricci_of_cycles(n, kappa):
    np.testing.assert_allclose(ollivier_ricci(as_graph(nx.cycle_graph(n))), kappa, atol=1e-12)


def test_ricci_matches_the_linear_programming_reference(random_graphs):
    for G in random_graphs[:8]:
        g = as_graph(G)
        ref = reference_ollivier_ricci(G)
        want = [ref.get((u, v), ref.get((v, u))) for u, v in g.edges.tolist()]
        np.testing.assert_allclose(ollivier_ricci(g), want, atol=1e-8)


def test_degree_centrality_matches_networkx(random_graphs):
    for G in random_graphs:
        want = nx.degree_centrality(G)
        got = degree_centrality(as_graph(G))
        np.testing.assert_allclose(got, [want[v] for v in G.nodes()], atol=1e-12)


def test_heat_kernel_signature_sums_to_the_heat_trace():
    g = as_graph(nx.petersen_graph())
    lap = nx.normalized_laplacian_matrix(nx.petersen_graph()).toarray()
    trace = np.exp(-np.linalg.eigvalsh(lap)).sum()
    np.testing.assert_allclose(heat_kernel_signature(g).sum(), trace, rtol=1e-10)


def test_values_are_rounded_to_six_decimals():
    v = filtration_values(as_graph(nx.path_graph(8)), "degree")
    np.testing.assert_array_equal(v, np.round(v, 6))
    assert v[1] == 0.285714


def test_unknown_filtration_raises():
    with pytest.raises(ValueError, match="filtration: expected one of"):
        filtration_values(as_graph(nx.path_graph(3)), "betweenness")


def test_label_filtration_needs_labels():
    with pytest.raises(ValueError, match="needs node labels"):
        filtration_values(as_graph(nx.path_graph(3)), "label")


def test_bad_alpha_and_weights_raise():
    g = as_graph(nx.path_graph(3))
    with pytest.raises(ValueError, match="alpha"):
        ollivier_ricci(g, alpha=1.0)
    with pytest.raises(ValueError, match="weights"):
        ollivier_ricci(g, weights=np.array([1.0, -1.0]))


def test_bad_hks_time_raises():
    with pytest.raises(ValueError, match="t: expected a finite diffusion time"):
        heat_kernel_signature(as_graph(nx.path_graph(3)), t=0.0)


def test_atomic_weight_is_rdkits_standard_weight():
    from topoformer.filtrations import atomic_weight

    from shared_core.data import mol_graph

    g = as_graph(mol_graph("OC(=O)CCl"))  # O C O C Cl (no hydrogens)
    np.testing.assert_allclose(
        atomic_weight(g), [15.999, 12.011, 15.999, 12.011, 35.453], atol=1e-3
    )
    with pytest.raises(ValueError, match="atomic numbers"):
        atomic_weight(make_graph(2, np.array([[0], [1]]), np.array([0, 6])))
