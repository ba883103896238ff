"""Graph conversion and its boundary checks."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from topoformer.graph import as_graph, make_graph, triangles


def test_edges_are_canonical_and_deduplicated():
    g = make_graph(4, np.array([[1, 0, 2, 3, 0], [0, 1, 3, 2, 2]]))
    np.testing.assert_array_equal(g.edges, [[0, 1], [0, 2], [2, 3]])


def test_networkx_tu_and_mol_graphs_convert(mutag):
    graphs, _ = mutag
    assert graphs[0].num_nodes == 17 and graphs[0].node_labels is not None
    g = as_graph(nx.karate_club_graph())
    assert (g.num_nodes, g.num_edges) == (34, 78)
    assert len(triangles(g)) == sum(nx.triangles(nx.karate_club_graph()).values()) // 3


def test_empty_graph_raises():
    with pytest.raises(ValueError, match="at least one node"):
        make_graph(0, np.zeros((2, 0), dtype=np.int64))
    with pytest.raises(ValueError, match="at least one node"):
        as_graph(nx.Graph())


def test_bad_edges_raise():
    with pytest.raises(ValueError, match="self-loop"):
        make_graph(3, np.array([[0, 1], [0, 2]]))
    with pytest.raises(ValueError, match="node ids must lie in 0..2"):
        make_graph(3, np.array([[0], [3]]))
    with pytest.raises(ValueError, match=r"shape \(2, m\)"):
        make_graph(3, np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(TypeError, match="integer node ids"):
        make_graph(3, np.array([[0.0], [1.0]]))
    with pytest.raises(TypeError, match="num_nodes"):
        make_graph(2.0, np.zeros((2, 0), dtype=np.int64))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="node_labels"):
        make_graph(3, np.array([[0], [1]]), node_labels=np.zeros(2, dtype=np.int64))
    with pytest.raises(TypeError, match="expected a topoformer Graph"):
        as_graph("C1CC1")


def test_triangles_and_components_on_both_code_paths():
    from topoformer.graph import component_labels

    for n, p in ((40, 0.2), (600, 0.01), (5000, 0.0003)):  # dense / sparse rows; numpy / scipy
        G = nx.gnp_random_graph(n, p, seed=n)
        g = as_graph(G)
        assert len(triangles(g)) == sum(nx.triangles(G).values()) // 3
        lab = component_labels(n, g.edges[:, 0], g.edges[:, 1])
        assert (lab == np.arange(n)).sum() == nx.number_connected_components(G)
        for comp in list(nx.connected_components(G))[:50]:
            assert {int(lab[v]) for v in comp} == {min(comp)}


def test_triangle_edge_ids_are_the_sides_of_every_triangle(random_graphs):
    from topoformer.graph import triangle_edge_ids, triangle_edges, triangles

    for G in [*random_graphs, nx.complete_graph(6), nx.path_graph(3)]:
        g = as_graph(G)
        fast = {tuple(r) for r in triangle_edge_ids(g).tolist()}
        slow = {tuple(r) for r in triangle_edges(g, triangles(g)).tolist()}
        assert fast == slow and len(fast) == len(triangles(g))
