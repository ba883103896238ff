"""The console script: --help without torch, one-line error without the data extra, micro end to end."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from msgen.cli import main

from shared_core.testing import assert_missing_extra_is_one_line

HAVE_QM9 = importlib.util.find_spec("qm9pack") is not None


def test_help_does_not_import_torch() -> None:
    code = "import sys, msgen.cli; sys.exit('torch' in sys.modules or 'rdkit' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_reproduce_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--help"])
    assert e.value.code == 0
    assert "micro" in capsys.readouterr().out


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
