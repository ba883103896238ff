"""The console script: fast help, and the micro reproduction end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from explainable_mixtures.cli import main
from explainable_mixtures.costs import ESTIMATE_S, LAMBDA_ESTIMATE_S

from shared_core.testing import (
    assert_bad_scale_is_a_usage_error,
    assert_costs_are_the_committed_runs,
    assert_import_is_light,
    run_micro,
)


def test_help_does_not_import_torch():
    assert_import_is_light("explainable_mixtures.cli")


def test_bad_scale_is_a_usage_error(capsys):
    assert_bad_scale_is_a_usage_error(main, capsys)


def test_micro_reproduce_writes_its_report(tmp_path):
    run = run_micro(main, "explainable-mixtures", tmp_path, plots=2)
    metrics = json.loads((run / "metrics.json").read_text())
    nll = metrics["metrics"]["results"]["planted-1d"]
    assert set(nll) >= {"EMM (ours)", "GMM on y", "tree + Gaussian leaves", "MDN", "truth"}
    assert nll["EMM (ours)"] < nll["GMM on y"]  # the rules carry information about y
    assert nll["EMM (paper)"] < nll["GMM on y"]
    assert (run / "report.md").exists() and (run / "planted_boxes.png").exists()
    assert (run / "qm9-gap_rule_densities.png").exists()


def test_lambda_ablation_is_one_command(tmp_path, capsys):
    from explainable_mixtures.experiments.lambda_ablation import LAMS

    assert main(["ablate-lambda", "--scale", "micro", "--out", str(tmp_path)]) == 0
    assert "planted-1d seed 1/1: lambda = 0.3" in capsys.readouterr().err  # progress lines
    (run,) = (tmp_path / "explainable-mixtures-lambda").iterdir()
    results = json.loads((run / "metrics.json").read_text())["metrics"]["results"]
    assert set(results) == {"planted-1d", "qm9-gap"}  # micro skips diabetes
    for rows in results.values():
        assert set(rows) == {str(lam) for lam in LAMS}
        for row in rows.values():
            assert row["rules"] >= 1 and row["nll"] == row["nll"]  # counted, not NaN
    assert "lambda ablation" in (run / "report.md").read_text()


def test_costs_are_the_committed_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """ESTIMATE_S and LAMBDA_ESTIMATE_S (the ETA's figures) are the committed runs' CPU time,
    and --help prints them."""
    results = Path(__file__).resolve().parents[1] / "results"
    if not results.is_dir():
        pytest.skip("results/ lives in the repository, not beside a copied tests folder")
    measured = assert_costs_are_the_committed_runs(ESTIMATE_S, results, required=("tiny", "small"))
    assert set(measured) == {"tiny", "small"}
    lam = assert_costs_are_the_committed_runs(LAMBDA_ESTIMATE_S, results / "ablate-lambda")
    assert set(lam) == {"tiny"}
    for command, estimate in (("reproduce", ESTIMATE_S), ("ablate-lambda", LAMBDA_ESTIMATE_S)):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split()).replace(
            "- ", "-"
        )  # argparse wraps at hyphens
        assert f"tiny ~{estimate['tiny']:.0f} CPU-s" in text, text
        if "small" in estimate:
            assert f"small ~{estimate['small']:.0f} CPU-s" in text, text
