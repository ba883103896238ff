"""`topoformer fit`, `predict` and `tokens` through `main([...])` on the files in tests/data/,
the saved model's round trip, bad input, and `TopoScan` as a scikit-learn transformer."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from topoformer.cli import main
from topoformer.topo_scan import TopoScan

from shared_core.hub import Pretrained

DATA = Path(__file__).parent / "data"
CSV, NEW, TU = DATA / "mols.csv", DATA / "new.csv", DATA / "MUTAG30"
QUICK = ["--set", "folds=2", "--set", "epochs=2", "--set", "n_intervals=8"]


def _err(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("topoformer: error:"), lines
    assert sum("error" in line for line in lines) == 1, lines
    return lines[-1]


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path) as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def regression_model(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fit") / "model"
    runs = out.parent / "runs"
    code = main(["fit", "--data", str(CSV), "--target", "y", "--out", str(out),
                 "--runs", str(runs), *QUICK])  # fmt: skip
    assert code == 0
    return out


def test_fit_saves_a_model_with_cv_metrics(regression_model, capsys):
    import json

    prov = json.loads((regression_model / "provenance.json").read_text())
    metrics = prov["metrics"]
    assert metrics["folds"] == 2 and metrics["molecules"] == 40
    assert metrics["cv_rmse_honest_mean"] > 0
    assert (regression_model / "model.safetensors").exists()


def test_predict_writes_csv_and_the_round_trip_is_identical(regression_model, tmp_path, capsys):
    from topoformer.checkpoint import TrainedTopoFormer, featurise
    from topoformer.verbs import read_dataset

    out = tmp_path / "predictions.csv"
    assert main(["predict", "--checkpoint", str(regression_model), "--data", str(NEW),
                 "--out", str(out)]) == 0  # fmt: skip
    rows = _rows(out)
    assert [r["name"] for r in rows] == [f"mol{i}" for i in range(40, 46)]
    assert all(np.isfinite(float(r["y"])) for r in rows)
    assert main(["predict", "--checkpoint", str(regression_model), "--data", str(NEW),
                 "--out", str(tmp_path / "again.csv")]) == 0  # fmt: skip
    assert (tmp_path / "again.csv").read_text() == out.read_text()
    # the folder loads to the same model: same weights, same outputs as the CSV
    a = TrainedTopoFormer.from_pretrained(regression_model)
    b = TrainedTopoFormer.from_pretrained(regression_model)
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert ka == kb and torch.equal(va, vb)
    data = read_dataset(NEW, None, "smiles", False)
    xs, extra = featurise(a.scanner(), data.graphs, "smiles", data.smiles, a.config.ecfp_bits)
    pred = a.predict_inputs(xs, extra)[:, 0]
    np.testing.assert_allclose(pred, [float(r["y"]) for r in rows], rtol=1e-5)


def test_fit_classification_on_a_tu_folder(tmp_path, capsys):
    out = tmp_path / "model"
    assert main(["fit", "--data", str(TU), "--out", str(out), "--runs", str(tmp_path),
                 *QUICK]) == 0  # fmt: skip
    assert "2-fold CV accuracy" in capsys.readouterr().out
    pred = tmp_path / "p.csv"
    assert main(["predict", "--checkpoint", str(out), "--data", str(TU), "--out", str(pred)]) == 0
    rows = _rows(pred)
    assert len(rows) == 30 and {r["label"] for r in rows} <= {"-1", "1"}
    p = np.array([[float(r["p_-1"]), float(r["p_1"])] for r in rows])
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-5)
    # a model of TU graphs refuses SMILES
    assert main(["predict", "--checkpoint", str(out), "--data", str(NEW)]) == 2
    assert "trained on tu input" in _err(capsys)


def test_tokens_exports_the_sequences(tmp_path, capsys):
    out = tmp_path / "tokens.npz"
    assert main(["tokens", "--data", str(CSV), "--out", str(out)]) == 0
    with np.load(out) as f:
        assert f["ricci"].shape[0] == 40 and f["ricci"].shape[2] == 4
        assert f["atomic_weight"].shape[0] == 40
        assert list(f["names"][:2]) == ["mol0", "mol1"] and f["smiles"].shape == (40,)
        assert f["thresholds_ricci"].ndim == 1
    assert main(["tokens", "--data", str(CSV), "--out", str(tmp_path / "t.csv")]) == 2
    assert ".npz" in _err(capsys)


def test_tokens_with_a_checkpoint_use_its_thresholds(regression_model, tmp_path):
    from topoformer.checkpoint import TrainedTopoFormer

    out = tmp_path / "tokens.npz"
    assert main(["tokens", "--data", str(NEW), "--checkpoint", str(regression_model),
                 "--out", str(out)]) == 0  # fmt: skip
    th = TrainedTopoFormer.from_pretrained(regression_model).config.thresholds[0]
    with np.load(out) as f:
        np.testing.assert_array_equal(f["thresholds_ricci"], th)
        assert f["ricci"].shape == (6, len(th) - 2, 4)


@pytest.mark.parametrize(
    ("text", "args", "expected"),
    [
        ("smiles,y\nCCO,1.0\nC1CC,2.0\nCCC,3.0\n", ["--target", "y"], "line 3"),
        ("smiles,z\nCCO,1.0\n", ["--target", "y"], "y"),
        ("", ["--target", "y"], "empty"),
    ],
    ids=["invalid SMILES", "no such column", "empty file"],
)
def test_bad_csv_is_one_error_line_and_writes_nothing(tmp_path, capsys, text, args, expected):
    (tmp_path / "bad.csv").write_text(text)
    out = tmp_path / "model"
    assert main(["fit", "--data", str(tmp_path / "bad.csv"), "--out", str(out), *args]) == 2
    err = _err(capsys)
    assert "bad.csv" in err and expected in err
    assert not out.exists()


def test_skip_invalid_skips_and_counts(regression_model, tmp_path, capsys):
    (tmp_path / "new.csv").write_text("smiles,name\nCCO,a\nC1CC,b\nCCN,c\n")
    out = tmp_path / "p.csv"
    assert main(["predict", "--checkpoint", str(regression_model), "--data",
                 str(tmp_path / "new.csv"), "--out", str(out), "--skip-invalid"]) == 0  # fmt: skip
    assert "skipped line 3" in capsys.readouterr().out
    assert [r["name"] for r in _rows(out)] == ["a", "c"]


@dataclass(frozen=True)
class OtherConfig:
    width: int = 2


class OtherModel(torch.nn.Module, Pretrained):
    distribution = "shared-core"  # installed wherever this package is (CI installs one package)

    def __init__(self, config: OtherConfig) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(config.width, 1)


def test_another_packages_checkpoint_is_one_error_line(tmp_path, capsys):
    OtherModel(OtherConfig()).save_pretrained(tmp_path / "other")
    assert main(["predict", "--checkpoint", str(tmp_path / "other"), "--data", str(NEW)]) == 2
    err = _err(capsys)
    assert "--checkpoint" in err and "other" in err


# ---- TopoScan as a scikit-learn transformer -------------------------------------------------

EXPECTED_FAILED_CHECKS = {
    name: "X is a sequence of graphs; the check passes a numeric matrix, which TopoScan refuses"
    for name in (
        "check_fit_score_takes_y", "check_estimators_overwrite_params",
        "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
        "check_readonly_memmap_input", "check_n_features_in_after_fitting",
        "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_complex_data",
        "check_dtype_object", "check_estimators_empty_data_messages", "check_pipeline_consistency",
        "check_estimators_nan_inf", "check_estimator_sparse_tag", "check_estimator_sparse_array",
        "check_estimator_sparse_matrix", "check_estimators_pickle",
        "check_f_contiguous_array_estimator", "check_transformer_data_not_an_array",
        "check_transformer_general", "check_transformer_preserve_dtypes",
        "check_methods_sample_order_invariance", "check_methods_subset_invariance",
        "check_fit2d_1sample", "check_fit2d_1feature", "check_dict_unchanged",
        "check_fit_idempotent", "check_fit_check_is_fitted", "check_n_features_in",
        "check_fit2d_predict1d",
    )
}  # fmt: skip


def test_check_estimator_passes_every_check_that_takes_graphs():
    from sklearn.utils.estimator_checks import check_estimator

    results = check_estimator(
        TopoScan(("degree",), flatten=True), expected_failed_checks=EXPECTED_FAILED_CHECKS,
        on_fail=None,
    )  # fmt: skip
    failed = [r["check_name"] for r in results if r["status"] == "failed"]
    assert failed == [], failed
    passed = {r["check_name"] for r in results if r["status"] == "passed"}
    assert {"check_get_params_invariance", "check_set_params", "check_parameters_default_constructible",
            "check_no_attributes_set_in_init"} <= passed  # fmt: skip


def test_clone_pipeline_and_grid_search(random_graphs):
    from sklearn.base import clone
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline

    scan = TopoScan(("degree",), n_intervals=6)
    assert scan.get_params()["n_intervals"] == 6
    assert scan.set_params(m=1).m == 1
    copy = clone(scan)
    assert copy.get_params() == scan.get_params() and not hasattr(copy, "thresholds_")
    graphs = random_graphs * 2
    y = np.array([int(g.number_of_edges() > 10) for g in graphs])
    pipe = Pipeline([("topo", TopoScan(("degree",), flatten=True)),
                     ("clf", LogisticRegression(max_iter=200))])  # fmt: skip
    search = GridSearchCV(pipe, {"topo__n_intervals": [4, 6], "topo__m": [1, 2]}, cv=2)
    search.fit(graphs, y)
    assert set(search.best_params_) == {"topo__n_intervals", "topo__m"}
    assert search.predict(graphs).shape == (len(graphs),)
    X = search.best_estimator_["topo"].transform(graphs)
    names = search.best_estimator_["topo"].get_feature_names_out()
    assert X.shape == (len(graphs), len(names)) and names[0] == "degree_0_b0"
