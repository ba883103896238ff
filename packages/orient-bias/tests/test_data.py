from __future__ import annotations

import numpy as np
import pytest
from orient_bias.data import QM9_TARGETS, parse_qm9pack_csv

from shared_core.data import iter_qm9pack_csv


def test_fast_parser_matches_shared_core_reader(qm9_csv, tmp_path):
    head = tmp_path / "head.csv"
    with open(qm9_csv) as f:
        head.write_text("".join(next(f) for _ in range(301)))
    arrays, skipped = parse_qm9pack_csv(head)
    assert not skipped and len(arrays["names"]) == 300
    for b, m in enumerate(iter_qm9pack_csv(head)):
        n = len(m)
        np.testing.assert_array_equal(arrays["numbers"][b, :n], m.numbers)
        np.testing.assert_array_equal(arrays["numbers"][b, n:], 0)
        np.testing.assert_array_equal(arrays["positions"][b, :n], m.positions)
        assert arrays["names"][b] == m.name and arrays["smiles"][b] == m.properties["smiles"]
        for j, t in enumerate(QM9_TARGETS):
            assert arrays["targets"][b, j] == m.properties[t]
    # methane, as published (not centred)
    np.testing.assert_allclose(
        arrays["positions"][0, 0], [-0.0126981359, 1.0858041578, 0.0080009958]
    )
    assert parse_qm9pack_csv(qm9_csv, limit=5)[0]["index"].tolist() == [1, 2, 3, 4, 5]


def test_malformed_rows_are_reported_not_dropped(qm9_csv, tmp_path):
    with open(qm9_csv) as f:
        lines = [next(f) for _ in range(6)]
    bad = [
        *lines[:2],
        lines[2].replace("'H'", "'Xx'", 1),
        lines[3].replace("[[", "[[nan, ", 1),
        *lines[4:],
    ]
    f = tmp_path / "bad.csv"
    f.write_text("".join(bad))
    arrays, skipped = parse_qm9pack_csv(f)
    assert len(arrays["names"]) == 3 and len(skipped) == 2
    assert skipped[0][0].endswith(":3") and "element" in skipped[0][1]


def test_not_a_qm9pack_csv(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not a qm9pack CSV"):
        parse_qm9pack_csv(f)


def test_sample_rows_spans_all_parts_and_is_seeded():
    from orient_bias.data import sample_rows

    parts = np.cumsum([43610, 43611, 43610])  # qm9pack part sizes, in GDB index order
    rows = sample_rows(int(parts[-1]), 3000, seed=0)
    np.testing.assert_array_equal(rows, sample_rows(int(parts[-1]), 3000, seed=0))
    assert len(np.unique(rows)) == 3000 and np.all(np.diff(rows) > 0)
    counts = np.bincount(np.searchsorted(parts, rows, side="right"), minlength=3)
    assert np.all(np.abs(counts - 1000) < 120)
    assert not np.array_equal(rows, sample_rows(int(parts[-1]), 3000, seed=1))
    np.testing.assert_array_equal(sample_rows(10, None), np.arange(10))
    with pytest.raises(ValueError, match="n: expected"):
        sample_rows(10, 0)
