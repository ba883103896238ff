"""Flag-complex Betti numbers: GF(2) rank, gudhi, networkx components, Euler characteristic."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from topoformer.graph import as_graph, triangle_edges, triangles
from topoformer.homology import flag_betti, gf2_rank
from topoformer.reference import gf2_rank_dense, reference_betti


def gudhi_betti(g) -> tuple[int, int]:
    import gudhi

    st = gudhi.SimplexTree()
    for v in range(g.num_nodes):
        st.insert([v])
    for u, v in g.edges:
        st.insert([int(u), int(v)])
    st.expansion(2)
    st.compute_persistence(persistence_dim_max=True)  # else the top dimension is dropped
    b = [*list(st.betti_numbers()), 0, 0, 0]
    return b[0], b[1]


@pytest.mark.parametrize("seed", range(5))
def test_gf2_rank_matches_dense_elimination(seed):
    rng = np.random.default_rng(seed)
    r, c = int(rng.integers(1, 40)), int(rng.integers(3, 150))
    rows = rng.integers(0, c, size=(r, 3))
    dense = np.zeros((r, c), dtype=np.uint8)
    for i, row in enumerate(rows):
        for j in row:
            dense[i, j] ^= 1
    assert gf2_rank(rows, c) == gf2_rank_dense(dense)


def test_gf2_rank_of_the_boundary_of_a_tetrahedron_is_three():
    g = as_graph(nx.complete_graph(4))
    t = triangles(g)
    ids = triangle_edges(g, t)
    assert gf2_rank(ids, g.num_edges) == 3  # four triangles, one relation over Z/2


def test_betti_matches_gudhi_reference_networkx_and_euler(random_graphs):
    for G in random_graphs:
        g = as_graph(G)
        b0, b1, b2 = flag_betti(g.num_nodes, g.edges)
        assert (b0, b1) == gudhi_betti(g)
        assert (b0, b1, b2) == reference_betti(G)
        assert b0 == nx.number_connected_components(G)
        assert g.num_nodes - g.num_edges + len(triangles(g)) == b0 - b1 + b2


def test_betti_of_mutag_graphs_matches_gudhi(mutag):
    graphs, _ = mutag
    for g in graphs:
        b = flag_betti(g.num_nodes, g.edges)
        assert (b[0], b[1]) == gudhi_betti(g)


def test_triangles_are_filled_so_b1_is_not_the_cycle_rank():
    for n, b1 in ((3, 0), (4, 0), (5, 0)):
        g = as_graph(nx.complete_graph(n))
        assert flag_betti(g.num_nodes, g.edges)[1] == b1
    g = as_graph(nx.cycle_graph(4))  # a square has no triangle: one hole
    assert tuple(flag_betti(g.num_nodes, g.edges)) == (1, 1, 0)
    g = as_graph(nx.octahedral_graph())  # the octahedron's flag complex is a 2-sphere
    assert tuple(flag_betti(g.num_nodes, g.edges)) == (1, 0, 1)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="num_columns"):
        gf2_rank(np.zeros((1, 3), dtype=np.int64), -1)
    with pytest.raises(ValueError, match=r"column indices must lie in 0..4"):
        gf2_rank(np.array([[0, 1, 5]]), 5)
    with pytest.raises(TypeError, match="integer column indices"):
        gf2_rank(np.array([[0.0, 1.0]]), 3)
    with pytest.raises(ValueError, match=r"shape \(r, k\)"):
        gf2_rank(np.array([0, 1]), 3)
    with pytest.raises(ValueError, match="num_nodes"):
        flag_betti(-1, np.zeros((0, 2), dtype=np.int64))
    with pytest.raises(ValueError, match=r"edges: expected shape \(m, 2\)"):
        flag_betti(3, np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="node ids must lie"):
        flag_betti(3, np.array([[0, 3]]))
    assert tuple(flag_betti(3, np.array([[1, 0], [0, 1], [2, 1]]))) == (1, 0, 0)  # any order


@pytest.mark.parametrize("seed", range(3))
def test_rank_packed_matches_dense_elimination_on_wide_rows(seed):
    from topoformer.homology import pack_rows, rank_packed

    rng = np.random.default_rng(seed)
    r, c = 60, 200  # rows span several 64-bit words
    rows = rng.integers(0, c, size=(r, 5))
    dense = np.zeros((r, c), dtype=np.uint8)
    for i, row in enumerate(rows):
        for j in row:
            dense[i, j] ^= 1
    assert rank_packed(pack_rows(rows)) == gf2_rank_dense(dense)
    assert rank_packed([]) == 0 and rank_packed([0, 0]) == 0


def test_forest_ranks_are_nodes_minus_components_per_group(random_graphs):
    from topoformer.homology import forest_ranks

    gs = [as_graph(G) for G in random_graphs[:4]]
    n = max(g.num_nodes for g in gs)
    group = np.concatenate([np.full(g.num_edges, i) for i, g in enumerate(gs)])
    src = np.concatenate([i * n + g.edges[:, 0] for i, g in enumerate(gs)])
    dst = np.concatenate([i * n + g.edges[:, 1] for i, g in enumerate(gs)])
    got = forest_ranks(len(gs), group, src, dst)
    want = [G.number_of_nodes() - nx.number_connected_components(G) for G in random_graphs[:4]]
    assert got.tolist() == want
    assert forest_ranks(2, group[:0], src[:0], dst[:0]).tolist() == [0, 0]
