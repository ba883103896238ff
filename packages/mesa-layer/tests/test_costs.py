"""The one cost figure: --help prints ESTIMATE_S, which is the committed runs' CPU time."""

from __future__ import annotations

from pathlib import Path

from mesa_layer.cli import main
from mesa_layer.experiments.costs import ESTIMATE_S

from shared_core.testing import assert_help_states_the_committed_costs


def test_help_costs_are_the_committed_runs() -> None:
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
