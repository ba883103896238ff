import json
import subprocess
import sys

import pytest
from masked_diffusion.cli import main


def test_bad_scale_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--scale", "huge"])
    assert e.value.code == 2
    assert "scale" in capsys.readouterr().err


def test_help_does_not_import_torch():
    code = "import sys, masked_diffusion.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_micro_reproduce_end_to_end(tmp_path):
    assert main(["reproduce", "--scale", "micro", "--device", "cpu", "--out", str(tmp_path)]) == 0
    (run,) = (tmp_path / "masked-diffusion").iterdir()
    assert json.loads((run / "config.json").read_text())["status"] == "complete"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["metrics"]["val_bits_per_char"] > 0
