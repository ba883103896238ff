"""The console script: --help without torch, one-line error without the data extra, micro end to end."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from msgen.cli import main
from msgen.costs import ESTIMATE_S

from shared_core.testing import (
    assert_help_states_the_committed_costs,
    assert_missing_extra_is_one_line,
)

HAVE_QM9 = importlib.util.find_spec("qm9pack") is not None


def test_help_does_not_import_torch() -> None:
    code = "import sys, msgen.cli; sys.exit('torch' in sys.modules or 'rdkit' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_reproduce_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--help"])
    assert e.value.code == 0
    assert "micro" in capsys.readouterr().out


def test_costs_are_the_committed_runs() -> None:
    """ESTIMATE_S (the ETA's figures) is the committed tiny and small runs' CPU time, and
    --help prints it."""
    assert_help_states_the_committed_costs(
        main,
        ESTIMATE_S,
        Path(__file__).parent,
        [
            f"tiny: ~{ESTIMATE_S['tiny']:.0f} CPU-s",
            f"small: ~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes",
        ],
        required=("tiny", "small"),
    )


def test_missing_data_extra_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    line = assert_missing_extra_is_one_line(
        main, "qm9pack", "msgen", "data", monkeypatch=monkeypatch, capsys=capsys, out=tmp_path
    )
    assert "QM9" in line


@pytest.mark.skipif(not HAVE_QM9, reason="needs the 'data' extra (qm9pack)")
def test_reproduce_micro_writes_the_report(tmp_path: Path) -> None:
    assert main(["reproduce", "--scale", "micro", "--out", str(tmp_path)]) == 0
    (run,) = (tmp_path / "msgen").iterdir()
    metrics = json.loads((run / "metrics.json").read_text())
    arms = set(metrics["metrics"]["metrics"])
    assert {"ETKDG", "random", "single-scale", "MSGEN", "oracle heavy + stage 2"} <= arms
    assert (run / "coverage_vs_delta.png").is_file() and (run / "report.md").is_file()


def test_gate_and_oracle_pass_the_clean_guide_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--guide-clean-fraction`` (ours, 0.4.1) reaches the configs the experiments run (the
    runs themselves are replaced; default 0)."""
    from msgen.experiments import conformers, gate, oracle

    seen: list[float] = []

    def fake_conformers(cfg: conformers.ConformerConfig, seed: int) -> dict[str, object]:
        seen.append(cfg.guide_clean_fraction)
        m = {k: 0.5 for k in gate.KEYS}
        return {"losses": [], "metrics": {"arm": m}, "guide_sigma": None}

    def fake_oracle(cfg: oracle.OracleConfig, seed: int) -> dict[str, object]:
        seen.append(cfg.guide_clean_fraction)
        return {"seed": seed}

    monkeypatch.setattr(conformers, "run", fake_conformers)
    monkeypatch.setattr(oracle, "run", fake_oracle)
    told = ["--guide-input", "calibrated", "--guide-noise", "0", "1"]
    assert gate.main(["--seeds", "0", *told, "--guide-clean-fraction", "0.5"]) == 0
    assert gate.main(["--seeds", "0", *told]) == 0
    assert oracle.main(["--seeds", "0", *told, "--guide-clean-fraction", "0.25"]) == 0
    assert seen == [0.5, 0.0, 0.25]
    for exp in (gate, oracle):
        with pytest.raises(SystemExit):
            exp.main(["--seeds", "0", "--guide-clean-fraction", "0.5"])
    assert seen == [0.5, 0.0, 0.25]  # refused before any run
