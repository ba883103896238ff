"""The console script and the framework-free import."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from shared_core.testing import assert_help_states_the_committed_costs, assert_import_is_light


def test_top_level_import_and_help_need_neither_torch_nor_jax():
    code = (
        "import sys, convt3, convt3.reference, convt3.cli;"
        "from convt3.experiments.config import SCALES;"
        "bad = [m for m in ('torch', 'jax', 'flax') if m in sys.modules];"
        "print(convt3.__version__); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr + out.stdout
    assert out.stdout.strip() == importlib.metadata.version("convt3")
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        import convt3

        _ = convt3.nope


def test_help_lists_the_scales():
    out = subprocess.run(
        [sys.executable, "-m", "convt3.cli", "reproduce", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0 and "micro" in out.stdout and "paper" in out.stdout
    assert_import_is_light("convt3.cli", heavy=("torch", "jax", "flax"))


def test_bad_options_are_one_error_line():
    out = subprocess.run(
        [sys.executable, "-m", "convt3.cli", "reproduce", "--scale", "huge"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_micro_reproduce_writes_its_report(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    from convt3.cli import main

    assert main(["reproduce", "--scale", "micro", "--out", str(tmp_path)]) == 0
    (run,) = (tmp_path / "convt3").iterdir()
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["cpu_s"] > 0
    tables = metrics["tables"]
    assert any(t.startswith("forced PDEs") for t in tables) and any(
        t.startswith("moving") for t in tables
    )
    paired = next(v for t, v in tables.items() if t.startswith("paired differences"))
    assert [r["arm - baseline"] for r in paired] == [
        "ConvT3, 1x1 B/C - ConvS5, 1x1 B/C",
        "MiniT3, 1x1 B/C - ConvS5, 1x1 B/C",
        "ConvT3 (3x3, ZOH) - ConvS5 (1x1 state)",
    ]
    assert (run / "report.md").exists() and (run / "error_vs_horizon_heat.png").exists()


def test_help_costs_are_the_committed_runs():
    """ESTIMATE_S (the ETA's and --help's one cost figure) is the committed tiny and small runs'
    CPU time, and --help prints it."""
    from convt3.cli import main
    from convt3.experiments.config import ESTIMATE_S

    assert_help_states_the_committed_costs(
        main,
        ESTIMATE_S,
        Path(__file__).parent,
        [
            f"tiny: ~{ESTIMATE_S['tiny']:.0f} CPU s",
            f"small: ~{ESTIMATE_S['small'] / 60:.0f} CPU minutes",
        ],
        required=("tiny", "small"),
    )
