import numpy as np
import pytest

from shared_core.data import read_table, write_table

pytest.importorskip("pandas")


def test_features_and_targets_with_dropna(data_dir):
    table = read_table(data_dir / "table.csv", ["x1", "x2"], ["y"], dropna=True)
    np.testing.assert_array_equal(table.features, [[0.5, 1.0], [2.5, 3.0], [3.5, 4.0]])
    np.testing.assert_array_equal(table.targets, [[1.5], [5.5], [7.5]])
    assert table.records == [2, 4, 5]  # lines of the kept rows (header = line 1)
    assert table.skipped == [(3, "empty cell in column(s) ['x2']")]
    assert table.metrics()["skipped_records"] == [{"line": 3, "reason": table.skipped[0][1]}]


def test_errors_name_the_column_and_line(data_dir):
    path = data_dir / "table.csv"
    with pytest.raises(ValueError, match=r"table\.csv, line 3: column 'x2' is empty"):
        read_table(path, ["x1", "x2"], ["y"])
    with pytest.raises(ValueError, match=r"no column 'x3'; expected columns"):
        read_table(path, ["x1", "x3"])
    with pytest.raises(
        ValueError, match=r"feature column 'colour' is not numeric \(line 2: 'red'\)"
    ):
        read_table(path, ["colour"])
    with pytest.raises(ValueError, match=r"target column 'colour'"):
        read_table(path, ["x1"], ["colour"])
    with pytest.raises(TypeError, match="features"):
        read_table(path, "x1")


def test_one_hot(data_dir):
    table = read_table(data_dir / "table.csv", ["x1", "colour"], ["y"], one_hot=True)
    assert table.feature_names == ["x1", "colour=blue", "colour=green", "colour=red"]
    np.testing.assert_array_equal(
        table.features[:, 1:], [[0, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 0]]
    )


def test_parquet_round_trip_and_empty_files(tmp_path):
    pytest.importorskip("pyarrow")
    path = write_table(tmp_path / "t.parquet", {"a": [1.0, 2.0, np.nan], "b": [3, 4, 5]})
    with pytest.raises(ValueError, match=r"t\.parquet, row 3: column 'a' is empty"):
        read_table(path, ["a"], ["b"])
    table = read_table(path, ["a"], ["b"], dropna=True)
    assert table.unit == "row" and table.records == [1, 2] and table.n_skipped == 1
    header_only = tmp_path / "h.csv"
    header_only.write_text("a,b\n")
    with pytest.raises(ValueError, match="holds no row"):
        read_table(header_only, ["a"])
    empty = tmp_path / "e.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"e\.csv is empty"):
        read_table(empty, ["a"])
