"""Planted data, the CSV reader (on files written here) and the QM9 descriptors."""

from __future__ import annotations

import numpy as np
import pytest
from explainable_mixtures.data import QM9_DESCRIPTORS, planted, planted_boxes, qm9_gap, read_csv


def test_planted_boxes_partition_the_cube():
    table = planted(2000, seed=0)
    boxes = planted_boxes()
    inside = np.all(
        (table.X[:, None, :] >= boxes[None, :, :, 0])
        & (table.X[:, None, :] <= boxes[None, :, :, 1]),
        -1,
    )
    assert (inside.sum(1) == 1).all()
    assert (inside.argmax(1) == table.labels).all()
    for c in range(4):  # each component's targets have the planted mean
        assert abs(table.y[table.labels == c, 0].mean() - table.means[c, 0]) < 0.15


def test_read_csv(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,target\n1,2,3.5\n4,5,6.5\n")
    table = read_csv(path, None, ["target"])
    assert table.feature_names == ("a", "b")
    np.testing.assert_array_equal(table.X, [[1, 2], [4, 5]])
    np.testing.assert_array_equal(table.y, [[3.5], [6.5]])


def test_read_csv_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_csv(tmp_path / "missing.csv", None, ["y"])
    path = tmp_path / "t.csv"
    path.write_text("a,target\n1,x\n")
    with pytest.raises(ValueError, match="row 2 column 'target': expected a number, got 'x'"):
        read_csv(path, None, ["target"])
    with pytest.raises(ValueError, match="targets: expected column names"):
        read_csv(path, None, ["nope"])
    with pytest.raises(ValueError, match=r"features: columns \['zz'\]"):
        read_csv(path, ["zz"], ["target"])
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError, match="is empty"):
        read_csv(tmp_path / "empty.csv", None, ["y"])


def test_qm9_gap_descriptors():
    table = qm9_gap(60, seed=0)
    assert table.X.shape == (60, len(QM9_DESCRIPTORS)) and table.y.shape == (60, 1)
    assert (table.X[:, 0] >= 1).all() and (table.X[:, 0] <= 9).all()  # QM9: <= 9 heavy atoms
    assert (table.X[:, 2] <= table.X[:, 1]).all()  # aromatic rings are rings
    assert ((table.X[:, 6] >= 0) & (table.X[:, 6] <= 1)).all()
    assert table.y.min() > 1.0 and table.y.max() < 20.0  # gaps in eV
