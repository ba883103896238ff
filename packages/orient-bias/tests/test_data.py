from __future__ import annotations

import numpy as np
import pytest
from orient_bias.data import QM9_TARGETS, parse_qm9pack_csv

from shared_core.data import iter_qm9pack_csv


def _literal_eval_reference(path):
    """The slow, obviously-correct reading of a qm9pack CSV (``ast.literal_eval`` per field)."""
    import ast
    import csv

    from shared_core.data import atomic_number
    from shared_core.data.molecules import QM9PACK_TARGETS

    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            z = [atomic_number(e) for e in ast.literal_eval(row["Elements"])]
            x = np.asarray(ast.literal_eval(row["XYZ_Ang"]), dtype=np.float64)
            t = [float(row[c]) for c in QM9PACK_TARGETS.values()]
            yield z, x, row, t


def test_parser_matches_literal_eval_reference(qm9_csv, tmp_path):
    head = tmp_path / "head.csv"
    with open(qm9_csv) as f:
        head.write_text("".join(next(f) for _ in range(301)))
    arrays, skipped = parse_qm9pack_csv(head)
    assert not skipped and len(arrays["names"]) == 300
    for b, (z, x, row, t) in enumerate(_literal_eval_reference(head)):
        n = len(z)
        np.testing.assert_array_equal(arrays["numbers"][b, :n], z)
        np.testing.assert_array_equal(arrays["numbers"][b, n:], 0)
        np.testing.assert_array_equal(arrays["positions"][b, :n], x)  # bit-identical floats
        assert arrays["names"][b] == row["XYZ_file"].removesuffix(".xyz")
        assert arrays["smiles"][b] == row["SMILES"] and arrays["index"][b] == int(row["Index"])
        np.testing.assert_array_equal(arrays["targets"][b], t)
    assert len(QM9_TARGETS) == arrays["targets"].shape[1] == 15
    # methane, as published (not centred)
    np.testing.assert_allclose(
        arrays["positions"][0, 0], [-0.0126981359, 1.0858041578, 0.0080009958]
    )
    assert parse_qm9pack_csv(qm9_csv, limit=5)[0]["index"].tolist() == [1, 2, 3, 4, 5]
    # the shared reader yields the same molecules
    for b, m in enumerate(iter_qm9pack_csv(head)):
        np.testing.assert_array_equal(arrays["positions"][b, : len(m)], m.positions)


def test_micro_loader_reads_heads_of_all_parts(qm9_csv):
    from orient_bias.data import load_qm9

    sub = load_qm9(50, seed=0, rows_per_part=40)
    assert len(sub) == 50 and sub.poses.positions.shape == (50, 29, 3)
    idx = sub.index
    assert idx.min() >= 1 and (idx > 43000).any()  # rows from later parts, not only part 1


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
