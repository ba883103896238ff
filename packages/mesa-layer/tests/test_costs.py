"""The one cost figure: --help prints ESTIMATE_S, which is the committed runs' CPU time."""

from __future__ import annotations

from pathlib import Path

import pytest
from mesa_layer.cli import main
from mesa_layer.experiments.costs import ESTIMATE_S

from shared_core.testing import assert_costs_are_the_committed_runs


def test_help_costs_are_the_committed_runs(capsys: pytest.CaptureFixture[str]) -> None:
    results = Path(__file__).resolve().parents[1] / "results"
    if not results.is_dir():
        pytest.skip("results/ lives in the repository, not beside a copied tests folder")
    measured = assert_costs_are_the_committed_runs(ESTIMATE_S, results)
    assert "tiny" in measured and "small" in measured
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"tiny: ~{ESTIMATE_S['tiny']:.0f} CPU-s" in text, text
    assert f"small: ~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes" in text, text
