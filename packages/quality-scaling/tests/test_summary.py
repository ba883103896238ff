"""`quality-scaling fit` on a user's CSV: the readable summary, --out for `plan`, --plot, and one
clear error per kind of bad table (missing column, text cell, NaN cell, non-positive value)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from quality_scaling.cli import main
from quality_scaling.fit import FitResult
from quality_scaling.laws import CHINCHILLA, QUALITY_FIXED_N
from quality_scaling.summary import gamma_verdict, law_formula
from quality_scaling.tables import read_runs_csv

RUNS = Path(__file__).parent / "data" / "runs.csv"  # 48 runs planted with gamma = 0.6


def _fit(law, params, samples=None) -> FitResult:
    theta = law.theta(params)
    draws = np.empty((0, law.n_params)) if samples is None else samples
    return FitResult(law, theta, 0.0, 10, samples=draws)


def test_fit_prints_the_law_and_the_verdict_and_writes_json_and_plot(tmp_path, capsys) -> None:
    out, png = tmp_path / "fit.json", tmp_path / "fit.png"
    args = ["fit", "--data", str(RUNS), "--q-col", "Q", "--bootstrap", "30"]
    assert main([*args, "--out", str(out), "--plot", str(png)]) == 0
    text = capsys.readouterr().out
    assert "quality law fitted to 48 runs" in text
    assert "L(N, D, Q) = " in text and "Q^0.6" in text
    assert "(95 %): sublinear" in text
    report = json.loads(out.read_text())
    lo, hi = report["ci"]["gamma"]
    assert lo < 0.6 < hi < 1  # the planted gamma, inside its interval, below 1
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["plan", str(out), "--compute", "1e21", "--quality", "0.8"]) == 0
    assert json.loads(capsys.readouterr().out)["compute_at_Q1_for_same_loss"] < 1e21


def test_verdict_follows_the_interval() -> None:
    p = {"B": 100.0, "E": 1.0, "beta": 0.3, "gamma": 0.9}
    point = _fit(QUALITY_FIXED_N, p)
    assert "point estimate" in gamma_verdict(point)
    below = QUALITY_FIXED_N.theta(p)[None] + np.zeros((20, 1))
    below[:, 3] = np.linspace(0.8, 0.95, 20)  # theta = [b, e, beta, gamma]
    assert "sublinear" in gamma_verdict(_fit(QUALITY_FIXED_N, p, below))
    across = below.copy()
    across[:, 3] = np.linspace(0.8, 1.2, 20)
    assert "undecided" in gamma_verdict(_fit(QUALITY_FIXED_N, p, across))
    above = below.copy()
    above[:, 3] = np.linspace(1.1, 1.3, 20)
    assert "superlinear" in gamma_verdict(_fit(QUALITY_FIXED_N, p, above))
    chin = _fit(CHINCHILLA, {"A": 400.0, "B": 1e3, "E": 1.8, "alpha": 0.34, "beta": 0.28})
    assert law_formula(chin) == "L(N, D) = 1.8 + 400 / N^0.34 + 1000 / D^0.28"
    with pytest.raises(ValueError, match="chinchilla law has no gamma"):
        gamma_verdict(chin)


def _csv(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "runs.csv"
    path.write_text(body)
    return path


BAD_TABLES = {
    "no loss column": ("N,D,Q,nll\n1e6,1e8,1,3\n", "column 'loss': not in runs.csv"),
    "a text cell": ("N,D,Q,loss\n1e6,1e8,1,3\n2e6,many,1,2.9\n", "row 3, column 'D': expected a number"),
    "a NaN cell": ("N,D,Q,loss\n1e6,1e8,1,3\n2e6,2e8,1,nan\n", "row 3, column 'loss': empty, NaN"),
    "an empty cell": ("N,D,Q,loss\n1e6,1e8,,3\n", "row 2, column 'Q': empty, NaN"),
    "a zero loss": ("N,D,Q,loss\n1e6,1e8,1,3\n2e6,2e8,1,0\n", "row 3, column 'loss': expected a value > 0"),
    "a negative D": ("N,D,Q,loss\n1e6,-1e8,1,3\n", "row 2, column 'D': expected a value > 0"),
    "Q above 1": ("N,D,Q,loss\n1e6,1e8,1.5,3\n", "row 2, column 'Q': expected a quality in (0, 1]"),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD_TABLES)
def test_bad_table_is_one_error_naming_row_and_column(case, tmp_path, capsys) -> None:
    body, message = BAD_TABLES[case]
    path = _csv(tmp_path, body)
    with pytest.raises(ValueError) as info:
        read_runs_csv(path, q_col="Q")
    assert message in str(info.value)
    assert main(["fit", "--data", str(path), "--q-col", "Q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error:" in err[0] and message in err[0]


def test_dropna_drops_rows_with_missing_cells(tmp_path) -> None:
    path = _csv(tmp_path, "N,D,Q,loss\n1e6,1e8,1,3\n2e6,2e8,,2.9\n4e6,4e8,0.5,nan\n8e6,8e8,1,2.5\n")
    rows = read_runs_csv(path, q_col="Q", dropna=True)
    assert len(rows) == 2 and list(rows.N) == [1e6, 8e6]
    with pytest.raises(ValueError, match="every row has an empty or NaN cell"):
        read_runs_csv(_csv(tmp_path, "N,D,Q,loss\n1e6,1e8,,3\n"), q_col="Q", dropna=True)


@pytest.mark.parametrize("suffix", [".tsv", ".parquet"])
def test_tsv_and_parquet_read_as_the_csv(tmp_path, suffix) -> None:
    """shared-core's table reader gives `fit` TSV and Parquet files: the same runs as the CSV."""
    from shared_core.data.tables import read_frame, write_table

    path = write_table(tmp_path / f"runs{suffix}", read_frame(RUNS))
    want, got = read_runs_csv(RUNS, q_col="Q"), read_runs_csv(path, q_col="Q")
    for column in ("N", "D", "loss", "Q"):
        np.testing.assert_array_equal(getattr(got, column), getattr(want, column))
    bad = write_table(
        tmp_path / f"bad{suffix}", {"N": [1e6, 2e6], "D": [1e8, -1.0], "loss": [3, 2]}
    )
    row = 2 if suffix == ".parquet" else 3  # a Parquet file has rows, not lines
    with pytest.raises(ValueError, match=f"row {row}, column 'D': expected a value > 0"):
        read_runs_csv(bad)
