"""Datasets: MUTAG from grakel, any TU folder, FreeSolv with a scaffold split."""

from __future__ import annotations

import numpy as np
import pytest
from topoformer.data import load_tu_graphs


def test_mutag_has_188_graphs_and_125_mutagenic(mutag):
    graphs, y = mutag
    assert len(graphs) == 188
    assert np.bincount(y).tolist() == [63, 125]


def _write_tu(folder, a_lines: str) -> None:
    folder.mkdir()
    (folder / "TOY_A.txt").write_text(a_lines)
    (folder / "TOY_graph_indicator.txt").write_text("1\n1\n1\n2\n2\n")
    (folder / "TOY_graph_labels.txt").write_text("3\n7\n")


def test_a_users_tu_folder_reads(tmp_path):
    _write_tu(tmp_path / "TOY", "1, 2\n2, 1\n2, 3\n3, 2\n4, 5\n5, 4\n")
    graphs, y = load_tu_graphs(tmp_path / "TOY")
    assert [g.num_edges for g in graphs] == [2, 1]
    assert y.tolist() == [0, 1]


def test_a_malformed_tu_file_raises(tmp_path):
    _write_tu(tmp_path / "TOY", "1, 2\n2\n")
    with pytest.raises(ValueError, match="TOY_A.txt"):
        load_tu_graphs(tmp_path / "TOY")
    with pytest.raises(FileNotFoundError):
        load_tu_graphs(tmp_path / "missing")


def test_freesolv_scaffold_split_is_disjoint():
    pytest.importorskip("rdkit")
    from topoformer.data import ecfp, load_freesolv

    task = load_freesolv(limit=80)
    parts = [task.train, task.valid, task.test]
    assert sum(len(p) for p in parts) == 80
    assert len(np.intersect1d(task.train, task.test)) == 0
    assert all(g.node_labels is not None for g in task.graphs)
    assert ecfp(task.smiles[:3]).shape == (3, 1024)
    with pytest.raises(ValueError, match="limit"):
        load_freesolv(limit=3)
