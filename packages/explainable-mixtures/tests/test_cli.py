"""The console script: fast help, and the micro reproduction end to end."""

from __future__ import annotations

import json
from pathlib import Path

from explainable_mixtures.cli import main
from explainable_mixtures.costs import ESTIMATE_S, LAMBDA_ESTIMATE_S

from shared_core.testing import (
    assert_bad_scale_is_a_usage_error,
    assert_help_states_the_committed_costs,
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


def _shown(estimate: dict[str, float]) -> list[str]:
    return [
        f"{scale} ~{estimate[scale]:.0f} CPU-s" for scale in ("tiny", "small") if scale in estimate
    ]


def test_costs_are_the_committed_runs() -> None:
    """ESTIMATE_S and LAMBDA_ESTIMATE_S (the ETA's figures) are the committed runs' CPU time,
    and each command's --help prints its own."""
    tests = Path(__file__).parent
    measured = assert_help_states_the_committed_costs(
        main, ESTIMATE_S, tests, _shown(ESTIMATE_S), required=("tiny", "small")
    )
    assert set(measured) == {"tiny", "small"}
    # the lambda ablation's runs are results/ablate-lambda/<scale>.json
    lam = {f"ablate-lambda/{scale}": s for scale, s in LAMBDA_ESTIMATE_S.items()}
    measured = assert_help_states_the_committed_costs(
        main,
        lam,
        tests,
        _shown(LAMBDA_ESTIMATE_S),
        required=("ablate-lambda/tiny",),
        argv=("ablate-lambda", "--help"),
    )
    assert set(measured) == {"ablate-lambda/tiny"}
