import json
from importlib.metadata import version

import pytest
from crome.cli import main
from crome.experiments.config import SCALES, ExperimentConfig
from crome.experiments.controlled_world import config_for

from shared_core.cli import ReproduceArgs
from shared_core.testing import assert_bad_scale_is_a_usage_error, assert_import_is_light, run_micro


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and f"crome {version('crome')}" in capsys.readouterr().out


def test_bad_scale_is_rejected(capsys):
    assert_bad_scale_is_a_usage_error(main, capsys)


def test_bad_device_is_one_error_line(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--device", "tpu", "--out", str(tmp_path)])
    assert e.value.code == 2 and "--device: expected auto, cpu, cuda" in capsys.readouterr().err


@pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="checks the no-GPU error message"
)
def test_cuda_without_a_gpu_is_one_error_line(capsys, tmp_path):
    code = main(["reproduce", "--scale", "micro", "--device", "cuda", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("crome: error:") and len(err.strip().splitlines()) == 1


def test_scales_and_llm_flag():
    assert list(SCALES) == ["micro", "tiny", "small", "paper"]
    assert not SCALES["tiny"].llm_oracle and SCALES["small"].llm_oracle
    assert SCALES["micro"].backbone == "random-bert" and SCALES["tiny"].backbone == "minilm"
    cfg = config_for(ReproduceArgs(scale="tiny", seed=7), llm_oracle=True)
    assert cfg.llm_oracle and cfg.world.seed == 7 and cfg.train.seed == 7
    cfg = config_for(ReproduceArgs(scale="micro", config=SCALES["micro"], device="cpu"))
    assert cfg.scale == "micro" and cfg.train.device == "cpu" and not cfg.llm_oracle


def test_experiment_config_rejects_bad_values():
    with pytest.raises(ValueError, match="backbone: expected one of"):
        ExperimentConfig(backbone="gpt-5")
    with pytest.raises(ValueError, match="n_best_of: expected at least 2 candidates, got 1"):
        ExperimentConfig(n_best_of=1)


def test_help_does_not_import_torch():
    assert_import_is_light("crome.cli")


def test_micro_reproduce_runs_end_to_end(tmp_path, capsys):
    run_dir = run_micro(main, "crome", tmp_path)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["scale"] == "micro" and metrics["run"]["threads"] == 1
    for name in ("standard RM", "CROME RM"):
        m = metrics["metrics"]["results"][name]
        assert 0.0 <= m["iid_acc"] <= 1.0 and m["spurious_sens"] >= 0.0
    assert metrics["metrics"]["kept_after_filter"] > 0
    assert (run_dir / "report.md").is_file()


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


def test_augment_is_the_function_whatever_is_imported_first() -> None:
    """`from crome import AugmentConfig, augment` once gave the submodule crome/augment.py (fixed in
    shared-core's lazy_exports)."""
    from shared_core.testing import assert_fresh_import_is_callable

    assert_fresh_import_is_callable("crome", ["AugmentConfig", "augment"])


def test_no_export_is_shadowed_by_a_submodule() -> None:
    """``from crome.augment import ...`` then ``from crome import augment`` gave the submodule, not the
    function: the submodule is now `crome.augmentation`. With every submodule imported
    first, each export is what it names and none is also a submodule's name (issue 68)."""
    from shared_core.testing import assert_exports_not_shadowed

    assert_exports_not_shadowed("crome")


def test_the_cost_estimates_are_the_committed_runs():
    """`ESTIMATE_S` (the --help and heartbeat figure) is the committed tiny and small runs' CPU
    time, and ``reproduce --help`` prints both figures from it."""
    from pathlib import Path

    from crome.experiments.config import ESTIMATE_S

    from shared_core.testing import assert_help_states_the_committed_costs

    measured = assert_help_states_the_committed_costs(
        main,
        ESTIMATE_S,
        Path(__file__).parent,
        [
            f"tiny (MiniLM-L6) ~{ESTIMATE_S['tiny']:.0f} s of CPU",
            f"the SmolLM2 oracle) ~{ESTIMATE_S['small'] / 60:.0f} min of CPU",
        ],
        required=("tiny", "small"),
    )
    assert set(measured) == {"tiny", "small"}
