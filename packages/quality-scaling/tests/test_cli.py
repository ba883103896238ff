from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import synthetic

sys.path.insert(0, str(Path(__file__).parent))

from quality_scaling.cli import main


def test_fit_and_plan_commands(tmp_path: Path, capsys) -> None:
    d = synthetic(n=60, noise=0.002, seed=2)
    path = tmp_path / "runs.csv"
    lines = ["N,D,q_proxy,loss"] + [
        f"{a},{b},{c},{e}" for a, b, c, e in zip(d.N, d.D, d.Q, d.loss, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    assert main(["fit", str(path), "--law", "quality"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"]["gamma"] > 0
    assert main(["plan", json.dumps(out), "--compute", "1e21", "--quality", "0.8"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["compute_at_Q1_for_same_loss"] < 1e21


def test_cli_errors_are_one_line(tmp_path: Path, capsys) -> None:
    assert main(["fit", str(tmp_path / "missing.csv")]) == 2
    assert "error:" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("N,D,loss\n1,1,nan\n")
    assert main(["fit", str(bad), "--law", "chinchilla"]) == 2
    assert "loss: expected finite" in capsys.readouterr().err
