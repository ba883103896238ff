from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from quality_scaling.grid import Cell, make_cells, read_rows, rows_to_data, run_cell, run_grid


def _fake(cell: Cell) -> dict:
    return {
        "key": cell.key,
        **cell.__dict__,
        "N": 100.0 * cell.d_model,
        "D": float(cell.tokens),
        "q_proxy": 1 - cell.rate,
        "q_deficiency": 1 - cell.rate,
        "q_exact": float("nan"),
        "loss": 3.0 - cell.d_model / 100,
        "floor": 2.0,
        "N_non_embedding": 1.0,
    }


def test_grid_resumes_without_redoing_or_duplicating(tmp_path: Path) -> None:
    cells = make_cells("markov", "substitute", [0.0, 0.2], [4, 8], [256, 512])
    path = tmp_path / "grid.csv"
    calls: list[str] = []

    def interrupted(cell: Cell) -> dict:
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(cell.key)
        return _fake(cell)

    with pytest.raises(KeyboardInterrupt):
        run_grid(cells, path, runner=interrupted, show_progress=False)
    assert [r["key"] for r in read_rows(path)] == calls  # the 3 finished cells, whole
    redo: list[str] = []

    def counting(cell: Cell) -> dict:
        redo.append(cell.key)
        return _fake(cell)

    rows = run_grid(cells, path, runner=counting, show_progress=False)
    assert set(redo).isdisjoint(calls) and len(redo) == len(cells) - 3
    keys = [r["key"] for r in read_rows(path)]
    assert sorted(keys) == sorted(c.key for c in cells) and len(keys) == len(set(keys))
    assert len(rows) == len(cells)
    run_grid(cells, path, runner=counting, show_progress=False)  # nothing left to do
    assert len(redo) == len(cells) - 3
    with open(path) as f:
        assert len(list(csv.reader(f))) == len(cells) + 1  # header once


def test_run_cell_is_deterministic_and_logs_a_row() -> None:
    cell = Cell("markov", "substitute", 0.2, 4, 512)
    a, b = run_cell(cell), run_cell(cell)
    assert a["loss"] == b["loss"] and np.isfinite(a["loss"])
    assert a["q_proxy"] == pytest.approx(0.8) and 0 < a["q_exact"] < 1
    assert a["N"] > a["N_non_embedding"] > 0
    data = rows_to_data([a, {**a, "q_proxy": 1.0}])
    assert len(data) == 2


def test_seq2seq_cell_runs() -> None:
    row = run_cell(Cell("seq2seq", "substitute", 0.3, 8, 512))
    assert row["floor"] > 0 and row["loss"] > row["floor"] * 0.5


def test_bad_cells() -> None:
    with pytest.raises(ValueError, match="task"):
        Cell("imagenet", "substitute", 0.1, 8, 1024)
    with pytest.raises(ValueError, match="corruption"):
        Cell("markov", "delete", 0.1, 8, 1024)
    with pytest.raises(ValueError, match="tokens"):
        Cell("markov", "substitute", 0.1, 8, 10)
    with pytest.raises(ValueError, match="rows: expected at least one"):
        rows_to_data([])
