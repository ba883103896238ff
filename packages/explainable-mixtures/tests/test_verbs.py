"""`fit`, `predict` and `explain` on a CSV: files written, a save/load round trip that predicts
identically, and one clear error per kind of bad table (issue 66's list)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from explainable_mixtures.cli import main
from explainable_mixtures.tables import read_table
from explainable_mixtures.verbs import load_model

DATA = Path(__file__).parent / "data" / "planted.csv"  # 600 rows of planted(600, seed=0)
FAST = ["--set", "steps=40", "--set", "prune_rounds=1"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("emm") / "model"
    assert main(["fit", "--data", str(DATA), "--target", "y", "--n-rules", "4", *FAST,
                 "--out", str(out)]) == 0  # fmt: skip
    return out


def test_fit_writes_model_rules_and_plots(model_dir: Path) -> None:
    rules = json.loads((model_dir / "rules.json").read_text())
    meta = json.loads((model_dir / "model.json").read_text())
    assert meta["features"] == ["x0", "x1", "x2", "x3", "x4"] and meta["targets"] == ["y"]
    assert meta["settings"]["steps"] == 40 and meta["n_rules"] == 4
    assert len(rules) >= 1 and all(r["text"].startswith("IF ") for r in rules)
    for r in rules:
        assert (model_dir / f"rule_{r['rule']}.png").read_bytes()[:4] == b"\x89PNG"


def test_predict_round_trip_is_identical(model_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "pred.csv"
    assert main(["predict", "--checkpoint", str(model_dir), "--data", str(DATA),
                 "--out", str(out)]) == 0  # fmt: skip
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 600 and {"y_mean", "y_std", "w_rule1", "rule"} <= set(rows[0])
    est, _ = load_model(model_dir)
    table = read_table(DATA, target="y")
    mean = est.predict(table.X)[:, 0]  # (n, 1): one target column
    np.testing.assert_allclose([float(r["y_mean"]) for r in rows], mean, rtol=1e-5)
    assert [int(r["rule"]) for r in rows] == list(est.assign(table.X) + 1)
    w = np.array([[float(r[f"w_rule{i + 1}"]) for i in range(len(est.rules_))] for r in rows])
    np.testing.assert_allclose(w.sum(1), 1.0, atol=1e-3)
    again, _ = load_model(model_dir)  # a second load predicts bit-identically
    np.testing.assert_array_equal(again.predict(table.X), est.predict(table.X))


def test_explain_prints_the_rule_and_density(model_dir: Path, capsys) -> None:
    assert (
        main(["explain", "--checkpoint", str(model_dir), "--data", str(DATA), "--row", "17"]) == 0
    )
    text = capsys.readouterr().out
    assert text.startswith("row 17 (line 19): x0 = ")
    assert "weight" in text and "IF " in text and "log p(y | x) = " in text
    assert (
        main(["explain", "--checkpoint", str(model_dir), "--data", str(DATA), "--row", "600"]) == 2
    )
    assert "--row: expected a data row in [0, 600)" in capsys.readouterr().err


def _table(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "t.csv"
    path.write_text(body)
    return path


BAD = {
    "no target column": ("a,b\n1,2\n", {}, "target: column 'y' is not in t.csv"),
    "no feature column": ("a,y\n1,2\n", {"features": ["a", "c"]}, "features: column 'c' is not in"),
    "text feature": ("a,b,y\n1,red,2\n", {}, "row 2, column 'b': expected a number in this feature column, got 'red' (or pass --one-hot"),
    "text target": ("a,y\n1,high\n", {}, "row 2, column 'y': expected a number in this target"),
    "NaN cell": ("a,y\n1,2\nnan,3\n", {}, "row 3, column 'a': empty, NaN or infinite cell"),
    "empty cell": ("a,y\n1,2\n2,\n", {}, "row 3, column 'y': empty, NaN"),
    "ragged row": ("a,y\n1,2,3\n", {}, "row 2: expected 2 cells"),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD)
def test_bad_table_is_one_clear_error(case: str, tmp_path: Path, capsys) -> None:
    body, kwargs, message = BAD[case]
    path = _table(tmp_path, body)
    with pytest.raises(ValueError) as info:
        read_table(path, target="y", **kwargs)
    assert message in str(info.value)
    flags = ["--features", ",".join(kwargs["features"])] if "features" in kwargs else []
    assert (
        main(["fit", "--data", str(path), "--target", "y", *flags, "--out", str(tmp_path / "m")])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error:" in err[0] and message in err[0]


def test_dropna_and_one_hot(tmp_path: Path) -> None:
    path = _table(tmp_path, "a,colour,y\n1,red,2\n2,,3\n3,blue,4\nnan,red,5\n")
    table = read_table(path, target="y", dropna=True, one_hot=True)
    assert table.feature_names == ("a", "colour=blue", "colour=red")
    assert table.dropped == 2 and list(table.lines) == [2, 4]
    np.testing.assert_array_equal(table.X, [[1, 0, 1], [3, 1, 0]])
    assert table.categories == {"colour": ["blue", "red"]}
    later = _table(tmp_path, "a,colour,y\n1,green,2\n")
    with pytest.raises(ValueError, match="value 'green' was not seen in training"):
        read_table(later, target="y", categories=table.categories)
