"""The console script: --help without torch, micro end to end, one-line usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared_core.testing import (
    assert_bad_scale_is_a_usage_error,
    assert_help_states_the_committed_costs,
    assert_import_is_light,
)


def test_help_does_not_import_torch(capsys):
    from nextquill.cli import main

    assert_import_is_light("nextquill.cli")
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    assert "--scale" in capsys.readouterr().out


def test_help_costs_are_the_committed_runs():
    """--help and the heartbeat's ETA print ESTIMATE_S, and it is the committed runs' CPU time;
    the ablation's tiny figure is results/tiny-ablate.json's."""
    from nextquill.cli import main
    from nextquill.experiments.costs import ABLATE_ESTIMATE_S, ESTIMATE_S

    assert_help_states_the_committed_costs(
        main,
        {**ESTIMATE_S, "tiny-ablate": ABLATE_ESTIMATE_S["tiny"]},
        Path(__file__).parent,
        [
            f"tiny ~{ESTIMATE_S['tiny']:.0f} CPU-s",
            f"small (ContextSFT, L_n only, NextQuill; 5 seeds) ~{ESTIMATE_S['small'] / 60:.0f}",
            f"tiny takes ~{ABLATE_ESTIMATE_S['tiny']:.0f} CPU-s",
        ],
        required=("tiny", "small", "tiny-ablate"),
    )


def test_bad_scale_is_a_usage_error(capsys):
    from nextquill.cli import main

    assert_bad_scale_is_a_usage_error(main, capsys)


@pytest.mark.slow
def test_micro_reproduce_writes_the_table(tmp_path):
    from nextquill.cli import main

    assert main(["reproduce", "--scale", "micro", "--out", str(tmp_path)]) == 0
    (run,) = (tmp_path / "nextquill").iterdir()
    metrics = json.loads((run / "metrics.json").read_text())
    assert set(metrics["metrics"]["results"]) == {"sft", "nextquill"}
    assert (run / "planted.png").exists()
    assert "ContextSFT" in (run / "report.md").read_text()


@pytest.mark.slow  # about 16 s of CPU
def test_micro_ablation_writes_one_row_per_variant(tmp_path):
    from nextquill.cli import main
    from nextquill.experiments.ablation import VARIANTS

    assert main(["reproduce", "--scale", "micro", "--ablate", "--out", str(tmp_path)]) == 0
    (run,) = (tmp_path / "nextquill").iterdir()
    metrics = json.loads((run / "metrics.json").read_text())["metrics"]
    results = metrics["ablation"]
    assert list(results) == [v.label for v in VARIANTS]
    base, alpha = results[VARIANTS[0].label], results[VARIANTS[1].label]
    assert alpha["ln"] == base["ln"]  # L_n only does not depend on alpha: trained once
    assert set(metrics["theta_d"]) == {"1", "2"}
