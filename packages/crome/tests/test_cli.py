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


def test_experiment_evaluation_on_a_tiny_model(tiny_rm, tmp_path):
    from crome import world as W
    from crome.data import write_pairs
    from crome.experiments.controlled_world import _evaluate

    w = W.make_world(W.WorldConfig(n_facts=10, n_train=4, n_test=8))
    bench = write_pairs(tmp_path / "bench.jsonl", w.test_iid + w.test_cf)
    m = _evaluate(tiny_rm, w, bench, n_best_of=4, seed=0)
    assert 0.0 <= m["iid_acc"] <= 1.0 and 0.0 <= m["cf_acc"] <= 1.0
    assert m["spurious_sens"] > 0 and m["causal_sens"] > 0
    assert m["spurious_to_causal"] == m["spurious_sens"] / m["causal_sens"]
    assert 0.0 <= m["bon_gold"] <= 1.0
