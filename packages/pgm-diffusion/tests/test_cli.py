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
    assert out.stdout.startswith("pgm-diffusion 0.2.0")


def test_reproduce_end_to_end_at_micro_scale(tmp_path, capsys):
    assert main(["reproduce", "--scale", "micro", "--device", "cpu", "--out", str(tmp_path)]) == 0
    assert "pgm sample L=16 steps=2" in capsys.readouterr().out
    (run_dir,) = (tmp_path / "pgm-diffusion").iterdir()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    text = metrics["tables"]["text"]
    assert [r["model"] for r in text] == ["MDLM", "PGM", "MDLM", "PGM", "data (validation windows)"]
    assert all(r["gen_ppl"] > 1 for r in text)
    assert len(metrics["tables"]["digits"]) == 5
    for name in ("text_quality_vs_throughput", "digits_quality_vs_throughput", "report"):
        assert any(p.name.startswith(name) for p in run_dir.iterdir())
