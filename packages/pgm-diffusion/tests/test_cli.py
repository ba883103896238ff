import json
import subprocess
import sys

import pytest
from pgm.cli import main


def test_bad_scale_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--scale", "huge"])
    assert e.value.code == 2
    assert "scale" in capsys.readouterr().err


def test_help_does_not_import_torch():
    code = "import sys, pgm.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_console_script_is_pgm_diffusion():
    out = subprocess.run(
        [sys.executable, "-c", "from pgm.cli import main; main()", "--version"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert out.stdout.startswith("pgm-diffusion 0.3.0")


def test_reproduce_end_to_end_at_micro_scale(tmp_path, capsys):
    assert main(["reproduce", "--scale", "micro", "--device", "cpu", "--out", str(tmp_path)]) == 0
    assert "pgm 2+2 sample random order L=16 steps=2" in capsys.readouterr().out
    (run_dir,) = (tmp_path / "pgm-diffusion").iterdir()
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
