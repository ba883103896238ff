from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from edt_former.costs import ESTIMATE_S
from edt_former.experiments.qa import SCALES, _arm_connector, runs_of

from shared_core.testing import (
    assert_help_states_the_committed_costs,
    assert_import_is_light,
    run_micro,
)


def test_help_does_not_import_torch() -> None:
    assert_import_is_light("edt_former.cli")


def test_bad_scale_is_one_error_line() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "edt_former.cli", "reproduce", "--scale", "huge"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_scales_and_equal_budgets() -> None:
    assert list(SCALES) == ["micro", "tiny", "small", "paper"]
    assert SCALES["small"].llm == "smollm2" and SCALES["tiny"].llm == "tiny"
    for arm in ("static", "static+brics", "static+entropy", "edt-former"):
        for budget in (4, 8, 16):
            cc = _arm_connector(arm, budget, SCALES["tiny"])
            assert cc is not None and cc.n_static + cc.local_budget == budget
    assert _arm_connector("smiles-prompt", 8, SCALES["tiny"]) is None
    pairs = runs_of(SCALES["tiny"])
    assert ("smiles-prompt", SCALES["tiny"].main_budget) in pairs


@pytest.mark.slow
def test_micro_reproduce_runs(tmp_path: object) -> None:
    from edt_former.cli import main

    run_micro(main, "edt-former", tmp_path)


def test_missing_data_extra_is_one_line(monkeypatch, capsys, tmp_path) -> None:
    # the error comes before the run's plan line (shared_core.progress), so it stays alone
    from edt_former.cli import main

    from shared_core.testing import assert_missing_extra_is_one_line

    line = assert_missing_extra_is_one_line(
        main, "qm9pack", "edt-former", "data", monkeypatch=monkeypatch, capsys=capsys,
        out=tmp_path,
    )  # fmt: skip
    assert "QM9" in line


def test_costs_are_the_committed_runs() -> None:
    """ESTIMATE_S (the ETA's figures) is the committed tiny run's CPU time, and --help prints
    it."""
    from edt_former.cli import main

    measured = assert_help_states_the_committed_costs(
        main,
        ESTIMATE_S,
        Path(__file__).parent,
        [f"tiny (random frozen Llama, 3 seeds) ~{ESTIMATE_S['tiny']:.0f} s of CPU"],
    )
    assert set(measured) == {"tiny"}
