"""Training resumes from a checkpoint to the same weights; experiments and CLI at toy size."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mesa_layer.cli import main  # noqa: E402
from mesa_layer.torch import MesaNetConfig, MesaNetLM  # noqa: E402
from mesa_layer.train import TrainConfig, train  # noqa: E402


def _setup():
    torch.manual_seed(0)
    cfg = MesaNetConfig(
        vocab_size=13, hidden_size=16, num_heads=2, intermediate_size=16, max_cg_steps_train=4
    )

    def batch_fn(step):
        g = torch.Generator().manual_seed(step)
        x = torch.randint(0, 13, (2, 8), generator=g)
        return x, x

    return MesaNetLM(cfg), batch_fn, (lambda m, b: m(b[0], b[1])[1])


def test_resume_from_checkpoint_gives_the_same_weights(tmp_path):
    cfg = TrainConfig(steps=6, warmup=2)
    model_a, batch_fn, loss_fn = _setup()
    train(model_a, batch_fn, loss_fn, cfg)
    model_b, _, _ = _setup()
    ckpt = tmp_path / "ckpt.safetensors"
    first = train(model_b, batch_fn, loss_fn, cfg, checkpoint=ckpt, stop_at=3)
    model_c, _, _ = _setup()  # a fresh process would start like this
    rest = train(model_c, batch_fn, loss_fn, cfg, checkpoint=ckpt)
    assert len(first) == 3 and len(rest) == 3
    for (name, a), b in zip(
        model_a.state_dict().items(), model_c.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0, msg=name)


def test_bad_train_config():
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="lr"):
        TrainConfig(lr=0.0)


def test_regression_experiment_runs_at_toy_size_and_mesa_learns():
    from mesa_layer.experiments import regression

    cfg = regression.RegressionConfig(
        d=4, T=16, batch_size=8, hidden_size=16, num_heads=2, intermediate_size=16, eval_batch=16,
        eval_cg_steps=(1, 4), methods=("mesa", "gla"), train=TrainConfig(steps=30, warmup=3, lr=1e-2),
    )  # fmt: skip
    out = regression.run(cfg)
    assert set(out["mse"]) == {"mesa", "gla"} and len(out["mse"]["mesa"]) == 16
    assert [s for s, _ in out["cg_sweep"]] == [1, 4]
    assert all(len(v) == 16 and all(e >= 0 for e in v) for v in out["mse"].values())
    # training reduces the loss (the tiny run is too short to expect more)
    assert out["final_loss"]["mesa"] < out["first_loss"]["mesa"]


def test_cli_bad_scale_and_version(capsys):
    with pytest.raises(SystemExit):
        main(["reproduce", "--scale", "huge"])
    with pytest.raises(SystemExit):
        main(["--version"])
    assert "mesa-layer 0.1.0" in capsys.readouterr().out


def test_cli_reports_bad_device_as_one_error_line(capsys, tmp_path):
    assert main(["reproduce", "--device", "tpu", "--out", str(tmp_path)]) == 2
    assert "error: device" in capsys.readouterr().err
