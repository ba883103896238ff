import contextlib
import importlib.util

import numpy as np
import pytest

from shared_core.data import load, package_dir, read_tu


def write_tu(root, name="TOY", drop=(), **override):
    """Two graphs in the TU layout: a triangle (nodes 1-3) and one edge (nodes 4-5)."""
    files = {
        "A": "1, 2\n2, 1\n2, 3\n3, 2\n3, 1\n1, 3\n4, 5\n5, 4\n",
        "graph_indicator": "1\n1\n1\n2\n2\n",
        "graph_labels": "1\n-1\n",
        "node_labels": "0\n1\n2\n0\n0\n",
        "edge_labels": "0\n0\n1\n1\n2\n2\n3\n3\n",
        **override,
    }
    folder = root / name
    folder.mkdir()
    for suffix, text in files.items():
        if suffix not in drop:
            (folder / f"{name}_{suffix}.txt").write_text(text)
    return folder


def test_hand_written_folder(tmp_path):
    graphs, labels = read_tu(write_tu(tmp_path))
    assert labels.tolist() == [1, -1]
    tri, edge = graphs
    assert tri.num_nodes == 3 and edge.num_nodes == 2
    assert tri.edge_index.tolist() == [[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 0, 2]]
    assert edge.edge_index.tolist() == [[0, 1], [1, 0]]  # local ids: node 4 -> 0
    assert tri.node_labels.tolist() == [0, 1, 2] and edge.node_labels.tolist() == [0, 0]
    assert tri.edge_labels.tolist() == [0, 0, 1, 1, 2, 2] and edge.edge_labels.tolist() == [3, 3]


def test_optional_label_files(tmp_path):
    graphs, _ = read_tu(write_tu(tmp_path, drop=("edge_labels", "node_labels")))
    assert graphs[0].edge_labels is None and graphs[0].node_labels is None


def test_edges_out_of_file_order_are_grouped_by_graph(tmp_path):
    a = "4, 5\n1, 2\n5, 4\n2, 1\n"
    graphs, _ = read_tu(write_tu(tmp_path, A=a, edge_labels="7\n1\n8\n2\n"))
    assert graphs[0].edge_index.tolist() == [[0, 1], [1, 0]] and graphs[0].edge_labels.tolist() == [
        1,
        2,
    ]
    assert graphs[1].edge_index.tolist() == [[0, 1], [1, 0]] and graphs[1].edge_labels.tolist() == [
        7,
        8,
    ]


@pytest.mark.parametrize("missing", ["A", "graph_indicator", "graph_labels"])
def test_missing_required_file(tmp_path, missing):
    with pytest.raises(FileNotFoundError, match=f"folder: .* has no TOY_{missing}.txt"):
        read_tu(write_tu(tmp_path, drop=(missing,)))


def test_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="folder: no TU dataset folder"):
        read_tu(tmp_path / "nope")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"A": "1, 4\n4, 1\n"}, "edge between two different graphs"),
        ({"A": "1, 9\n"}, "outside 1..5"),
        ({"node_labels": "0\n1\n"}, "has 2 lines, expected 5"),
        ({"graph_indicator": "2\n2\n1\n1\n1\n"}, "non-decreasing"),
        ({"graph_labels": "1\n-1\n1\n"}, "graph ids 1..3"),
        ({"A": "1; 2\n"}, "integer column"),
    ],
)
def test_inconsistent_files(tmp_path, override, message):
    with pytest.raises(ValueError, match=message):
        read_tu(write_tu(tmp_path, **override))


@pytest.mark.skipif(
    importlib.util.find_spec("grakel") is None, reason="grakel not installed (extra 'graphs')"
)
def test_mutag_matches_grakel():
    from grakel.datasets.base import read_data

    graphs, labels = load("mutag")
    assert len(graphs) == 188 and sorted(np.unique(labels, return_counts=True)[1]) == [63, 125]
    assert sum(g.num_nodes for g in graphs) == 3371
    assert sum(g.edge_index.shape[1] for g in graphs) == 7442
    with contextlib.chdir(package_dir("grakel") / "tests" / "data"):
        ref = read_data("MUTAG", with_classes=True)
    np.testing.assert_array_equal(labels, ref.target)
    offset = 1  # grakel keeps the files' 1-based global node ids
    for g, (edges, node_labels, edge_labels) in zip(graphs, ref.data, strict=True):
        ours = {(int(u) + offset, int(v) + offset) for u, v in g.edge_index.T}
        assert ours == set(edges)
        assert {i + offset: int(lab) for i, lab in enumerate(g.node_labels)} == node_labels
        ours_el = {
            (int(u) + offset, int(v) + offset): int(lab)
            for (u, v), lab in zip(g.edge_index.T, g.edge_labels, strict=True)
        }
        assert ours_el == edge_labels
        offset += g.num_nodes
