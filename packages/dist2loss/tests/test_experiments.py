"""The toy task's data and the reproduce command at micro scale."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from dist2loss.data import RegressionTask, inputs_and_labels, make_sequences


def test_sequences_are_linear_with_bounded_noise_and_deterministic():
    task = RegressionTask(noise=0.0)
    seq = make_sequences(task, 50, seed=3)
    assert torch.equal(seq, make_sequences(task, 50, seed=3))
    assert seq.shape == (50, task.length) and (seq[:, 0] == task.bos).all()
    x, y = seq[:, 1::2].double(), seq[:, 2::2].double()
    # noiseless: y is exactly a x + b with one (a, b) per sequence
    a = (y[:, 1] - y[:, 0]) / (x[:, 1] - x[:, 0]).where(x[:, 1] != x[:, 0], torch.nan)
    ok = ~a.isnan()
    b = y[ok, 0] - a[ok] * x[ok, 0]
    assert torch.allclose(y[ok], a[ok, None] * x[ok] + b[:, None])
    noisy = make_sequences(RegressionTask(), 200, seed=1)
    assert int(noisy[:, 2::2].max()) < RegressionTask().n_numbers


def test_labels_only_at_y_positions():
    seq = make_sequences(RegressionTask(), 4, seed=0)
    inputs, labels = inputs_and_labels(seq)
    assert inputs.shape == labels.shape == (4, seq.shape[1] - 1)
    assert (labels[:, 0::2] == -100).all()
    assert torch.equal(labels[:, 1::2], seq[:, 2::2])


def test_help_is_fast_and_does_not_import_torch():
    code = "import sys; from dist2loss.cli import main; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_help_costs_are_the_committed_runs():
    """--help prints ESTIMATE_S, and its tiny figure is the committed run's CPU time."""
    from dist2loss.cli import main
    from dist2loss.experiments.reproduce import ESTIMATE_S

    from shared_core.testing import assert_help_states_the_committed_costs

    assert_help_states_the_committed_costs(
        main,
        ESTIMATE_S,
        Path(__file__).parent,
        [
            f"tiny ~{ESTIMATE_S['tiny']:.0f} CPU-s",
            f"small ~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes",
        ],
    )


def test_reproduce_micro(tmp_path):
    from dist2loss.cli import main

    t0 = time.perf_counter()
    assert main(["reproduce", "--scale", "micro", "--out", str(tmp_path)]) == 0
    runs = list((tmp_path / "dist2loss").iterdir())
    assert len(runs) == 1
    metrics = json.loads((runs[0] / "metrics.json").read_text())
    assert set(metrics["metrics"]["results"]) == {"ce", "dist2", "dist2_nn"}
    assert (runs[0] / "error_vs_n.png").exists()
    # the second finding, VQ digits, in the same run
    vq = metrics["metrics"]["vq"]
    assert set(vq["results"]) == {"ce", "dist2"}
    for method in ("ce", "dist2"):
        cell = vq["results"][method]["100"]
        assert cell["fd_lo"] <= cell["fd"] <= cell["fd_hi"] and cell["fd"] > 0
        assert 0.0 <= cell["accuracy"] <= 1.0 and cell["heldout_ce"] > 0
    refs = vq["references"]
    assert refs["tau"] > 0 and refs["fd_real_pool_vs_test"] >= 0
    assert {r["method"] for r in metrics["tables"]["vq"]} >= {"CE"}
    for png in ("vq_fd_vs_n.png", "vq_samples.png"):
        assert (runs[0] / png).stat().st_size > 1000
    assert "## vq" in (runs[0] / "report.md").read_text()
    assert time.perf_counter() - t0 >= 0  # wall time is not asserted (shared machine)


def test_ntl_arm_without_its_extra_names_it(monkeypatch):
    # before 0.2.2 a hand-written UsageError; now shared_core's one line, as every missing extra
    import importlib.util

    from dist2loss.experiments.icl_regression import ntl_peer

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: None if name.split(".")[0] == "ntloss" else real(name, *a, **k),
    )
    with pytest.raises(
        FileNotFoundError, match=r"the 'ntl' arm needs the 'experiments' extra"
    ) as e:
        ntl_peer(RegressionTask())
    assert "uv sync --all-packages" in str(e.value)  # the root installs dist2loss[experiments]
    assert "pip install 'dist2loss[experiments]'" in str(e.value)
