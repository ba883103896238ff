import pytest
from crome.cli import main
from crome.experiments.controlled_world import SCALES, config_for

from shared_core.cli import ReproduceArgs


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and "crome 0.1.0" in capsys.readouterr().out


def test_bad_scale_is_rejected(capsys):
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--scale", "huge"])
    assert e.value.code == 2


def test_bad_device_is_one_error_line(capsys, tmp_path):
    code = main(["reproduce", "--device", "tpu", "--out", str(tmp_path)])
    assert code == 2 and "error: device" in capsys.readouterr().err


def test_scales_and_llm_flag():
    assert set(SCALES) == {"tiny", "small", "paper"}
    assert not SCALES["tiny"].llm_oracle and SCALES["small"].llm_oracle
    cfg = config_for(ReproduceArgs(scale="tiny", seed=7), llm_oracle=True)
    assert cfg.llm_oracle and cfg.world.seed == 7 and cfg.train.seed == 7
