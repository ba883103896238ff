import json
import subprocess
import sys
from pathlib import Path

import pytest
from meld_diffusion.cli import main
from meld_diffusion.costs import ESTIMATE_S
from meld_diffusion.experiments.qm9 import SCALES, build

from shared_core.testing import assert_help_states_the_committed_costs


def test_help_does_not_import_torch():
    code = "import sys, meld_diffusion.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_bad_scale_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--scale", "huge"])
    assert e.value.code == 2
    assert "scale" in capsys.readouterr().err


def test_costs_are_the_committed_runs():
    """ESTIMATE_S (the ETA's figures) is the committed tiny run's CPU time, and --help prints it;
    small has no one-process run (its committed rows are one arm per process), so only tiny is
    compared."""
    measured = assert_help_states_the_committed_costs(
        main,
        ESTIMATE_S,
        Path(__file__).parent,
        [
            f"tiny ~{ESTIMATE_S['tiny']:.0f} CPU-s",
            f"small ~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes",
        ],
        required=("tiny",),
    )
    assert set(measured) == {"tiny"}


def test_scales_and_arms():
    assert set(SCALES) == {"micro", "tiny", "small", "paper"}
    with pytest.raises(ValueError, match="arm: expected one of"):
        build("digress", SCALES["micro"], 0)


@pytest.mark.slow
def test_micro_reproduce_end_to_end(tmp_path):
    assert main(["reproduce", "--scale", "micro", "--device", "cpu", "--out", str(tmp_path)]) == 0
    (run,) = (tmp_path / "meld-diffusion").iterdir()
    assert json.loads((run / "config.json").read_text())["status"] == "complete"
    metrics = json.loads((run / "metrics.json").read_text())["metrics"]["results"]
    meld = {"meld", "meld-normalised"}
    assert set(metrics) >= {"vanilla", "class", "clash_vanilla", "clash_meld-normalised"} | meld
    assert set(metrics["phenylenediamine_pair"]) == {"vanilla", "hand", "class"} | meld
    for arm in ("vanilla", "class", *meld):
        assert {"validity", "uniqueness", "nspdk", "scaffold"} <= set(metrics[arm])
    assert (run / "state_clashing.png").is_file() and (run / "training_loss.png").is_file()
    report = (run / "report.md").read_text()
    assert "| |" not in report.replace("|  |", "| |"), "a blank table cell (use None: '–')"
    assert "–: not applicable to that row" in report  # the pair table's min/max for non-MELD


def test_missing_data_extra_is_one_line(monkeypatch, capsys, tmp_path):
    # the error comes before the run's plan line (shared_core.progress), so it stays alone
    from meld_diffusion.cli import main

    from shared_core.testing import assert_missing_extra_is_one_line

    line = assert_missing_extra_is_one_line(
        main, "qm9pack", "meld-diffusion", "data", monkeypatch=monkeypatch, capsys=capsys,
        out=tmp_path,
    )  # fmt: skip
    assert "QM9" in line
