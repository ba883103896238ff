import json
import math
import subprocess
import sys
import textwrap
from dataclasses import replace

import pytest
import torch

from shared_core.train import TrainConfig, decay_groups, fit, lr_factor, shard, step_generator


def _problem():
    """A planted linear regression: y = X w* + noise, batches a pure function of the step."""
    w_star = torch.tensor([[2.0], [-1.0], [0.5]])

    def batch_fn(step: int):
        g = step_generator(0, step)
        x = torch.randn(8, 3, generator=g)
        return x, x @ w_star + 0.01 * torch.randn(8, 1, generator=g)

    def loss_fn(model, batch):
        x, y = batch
        return torch.nn.functional.mse_loss(model(x), y)

    return w_star, batch_fn, loss_fn


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(3, 1)


def test_lr_factor_warmup_cosine_and_constant():
    cfg = TrainConfig(steps=10, warmup=2, min_lr_ratio=0.1)
    assert [lr_factor(s, cfg) for s in (0, 1)] == [0.5, 1.0]
    assert lr_factor(2, cfg) == 1.0
    assert lr_factor(10, cfg) == pytest.approx(0.1)
    assert lr_factor(6, cfg) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    const = TrainConfig(steps=10, warmup=0, schedule="constant")
    assert {lr_factor(s, const) for s in range(10)} == {1.0}


def test_recovers_planted_weights_and_logs_parts():
    w_star, batch_fn, loss_fn = _problem()
    seen = []

    def with_parts(model, batch):
        loss = loss_fn(model, batch)
        return loss, {"half": loss.item() / 2}

    model = _model()
    cfg = TrainConfig(steps=300, lr=0.05, warmup=10, weight_decay=0.0)
    res = fit(
        model, with_parts, batch_fn, cfg, show_progress=False, callback=lambda s, r: seen.append(s)
    )
    torch.testing.assert_close(model.weight.detach().T.cpu(), w_star, atol=0.02, rtol=0)
    assert res.step == 300 and len(res.losses) == 300 and seen == list(range(1, 301))
    assert res.history[0]["half"] == pytest.approx(res.history[0]["loss"] / 2)
    assert res.losses[-1] < 0.01 * res.losses[0]
    assert not model.training


def test_resume_is_exact(tmp_path):
    _, batch_fn, loss_fn = _problem()
    cfg = TrainConfig(steps=12, lr=0.05, warmup=3)
    full = _model()
    whole = fit(full, loss_fn, batch_fn, cfg, show_progress=False)
    part = _model()
    ckpt = tmp_path / "ck.safetensors"
    fit(part, loss_fn, batch_fn, cfg, checkpoint=ckpt, stop_at=5, show_progress=False)
    fresh = torch.nn.Linear(3, 1)  # different init: everything must come from the checkpoint
    rest = fit(fresh, loss_fn, batch_fn, cfg, checkpoint=ckpt, show_progress=False)
    assert rest.step == 12 and rest.losses == whole.losses
    torch.testing.assert_close(fresh.weight, full.weight, atol=0, rtol=0)


def test_grad_clip_bounds_the_step():
    model = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    big = lambda step: (torch.ones(1, 1), torch.full((1, 1), 1e6))  # noqa: E731
    loss = lambda m, b: torch.nn.functional.mse_loss(m(b[0]), b[1])  # noqa: E731
    cfg = TrainConfig(steps=1, lr=0.1, weight_decay=0.0, grad_clip=1.0, betas=(0.0, 0.0))
    fit(model, loss, big, cfg, show_progress=False)
    assert abs(model.weight.item()) <= 0.1 + 1e-6


def test_bfloat16_autocast_trains():
    _, batch_fn, loss_fn = _problem()
    model = _model()
    res = fit(
        model,
        loss_fn,
        batch_fn,
        TrainConfig(steps=60, lr=0.05, amp_dtype="bfloat16"),
        show_progress=False,
    )
    assert res.losses[-1] < 0.1 * res.losses[0]
    assert model.weight.dtype == torch.float32


@pytest.mark.parametrize("accum", [2, 3])  # 8 rows: equal micro-batches, and 3 + 3 + 2
def test_grad_accumulation_takes_the_whole_batch_step(accum):
    _, batch_fn, loss_fn = _problem()
    seen: list[int] = []

    def counted(model, batch):
        seen.append(len(batch[0]))
        loss = loss_fn(model, batch)
        return loss, {"rows": float(len(batch[0]))}

    cfg = TrainConfig(steps=5, lr=0.05, warmup=2)
    whole, split = _model(), _model()
    ref = fit(whole, loss_fn, batch_fn, cfg, show_progress=False)
    res = fit(split, counted, batch_fn, replace(cfg, grad_accum=accum), show_progress=False)
    assert seen == ([4, 4] if accum == 2 else [3, 3, 2]) * 5
    torch.testing.assert_close(split.weight, whole.weight, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(
        torch.tensor(res.losses), torch.tensor(ref.losses), rtol=1e-6, atol=0
    )
    assert res.history[0]["rows"] == pytest.approx(sum(n * n / 8 for n in seen[:accum]))
    with pytest.raises(ValueError, match="grad_accum: expected at most one micro-batch per row"):
        fit(_model(), loss_fn, batch_fn, replace(cfg, grad_accum=9), show_progress=False)


def test_decay_groups_exempt_vectors():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4))
    decay, plain = decay_groups(model, 0.1)
    assert decay["weight_decay"] == 0.1 and [p.ndim for p in decay["params"]] == [2]
    assert plain["weight_decay"] == 0.0 and len(plain["params"]) == 3


def test_shard_splits_every_leaf():
    batch = {
        "x": torch.arange(6),
        "ids": [0, 1, 2, 3, 4, 5],
        "name": "b",
        "pair": (torch.arange(6), None),
    }
    s = shard(batch, 1, 2)
    assert s["x"].tolist() == [1, 3, 5] and s["ids"] == [1, 3, 5] and s["name"] == "b"
    assert s["pair"][0].tolist() == [1, 3, 5] and s["pair"][1] is None
    assert shard(batch, 0, 1) is batch


def test_nan_loss_stops_with_the_step():
    model = _model()
    nan = lambda m, b: m(b).sum() * float("nan")  # noqa: E731
    with pytest.raises(FloatingPointError, match="step 0"):
        fit(model, nan, lambda s: torch.ones(2, 3), TrainConfig(steps=3), show_progress=False)


@pytest.mark.parametrize(
    ("field", "value"),
    [("steps", 0), ("lr", -1.0), ("lr", float("nan")), ("warmup", -1), ("schedule", "linear"),
     ("min_lr_ratio", 2.0), ("grad_clip", -1.0), ("amp_dtype", "int8"), ("betas", (0.9, 1.0)),
     ("grad_accum", 0)],
)  # fmt: skip
def test_bad_config(field, value):
    with pytest.raises(ValueError, match=field):
        TrainConfig(**{field: value})


def test_bad_arguments():
    _, batch_fn, loss_fn = _problem()
    with pytest.raises(TypeError, match="model"):
        fit("not a model", loss_fn, batch_fn, TrainConfig())  # type: ignore[arg-type]
    frozen = _model().requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameter"):
        fit(frozen, loss_fn, batch_fn, TrainConfig(), show_progress=False)


def ddp_problem():
    """The data-parallel check's problem: a noiseless planted regression, 8 rows a step."""
    w_star = torch.tensor([[2.0], [-1.0], [0.5]])

    def batch_fn(step):
        x = torch.randn(8, 3, generator=step_generator(0, step))
        return x, x @ w_star

    def loss_fn(model, batch):
        return torch.nn.functional.mse_loss(model(batch[0]), batch[1])

    return batch_fn, loss_fn


WORKER = textwrap.dedent(
    """
    import json, sys
    import torch
    sys.path.insert(0, sys.argv[2])
    from test_train import ddp_problem
    from shared_core.distributed import all_reduce_mean, init_distributed, is_main, shutdown
    from shared_core.train import TrainConfig, fit

    info = init_distributed("cpu")
    batch_fn, loss_fn = ddp_problem()
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    res = fit(model, loss_fn, batch_fn, TrainConfig(steps=5, lr=0.05), info=info, show_progress=False)
    out = {"weight": model.weight.detach().flatten().tolist(), "losses": res.losses,
           "world": info.world_size, "main": is_main(),
           "mean_rank": all_reduce_mean(float(info.rank))}
    with open(f"{sys.argv[1]}/rank{info.rank}.json", "w") as f:
        json.dump(out, f)
    shutdown()
    # Leave without the interpreter's teardown: torch 2.15's gloo aborted one rank there
    # ("terminate called without an active exception") in ~1 of 20 runs on a loaded
    # machine, after both ranks had written their results; the teardown is torch's, not
    # what this test checks. Any failure before this line still exits non-zero.
    import os
    os._exit(0)
    """
)


def test_two_processes_take_the_single_process_steps(tmp_path):
    """Under torchrun (gloo) both ranks end equal, and equal to one process on the whole batch."""
    import os

    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    here = os.path.dirname(__file__)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           str(script), str(tmp_path), here]  # fmt: skip
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}  # a crash shows each rank's Python stack
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    r0, r1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert (r0["world"], r1["world"]) == (2, 2) and r0["main"] and not r1["main"]
    assert r0["mean_rank"] == r1["mean_rank"] == 0.5
    assert r0["weight"] == r1["weight"]
    batch_fn, loss_fn = ddp_problem()
    torch.manual_seed(0)
    alone = torch.nn.Linear(3, 1)
    res = fit(
        alone, loss_fn, batch_fn, TrainConfig(steps=5, lr=0.05), device="cpu", show_progress=False
    )
    torch.testing.assert_close(
        torch.tensor(r0["weight"]), alone.weight.detach().flatten(), rtol=1e-5, atol=1e-6
    )
    torch.testing.assert_close(
        torch.tensor(r0["losses"]), torch.tensor(res.losses), rtol=1e-5, atol=1e-6
    )


def test_a_loss_with_an_lr_parameter_gets_the_scheduled_rate():
    _, batch_fn, loss_fn = _problem()
    cfg = TrainConfig(steps=6, lr=0.1, warmup=2, min_lr_ratio=0.1)
    seen: list[float] = []

    def with_lr(model, batch, *, lr):
        seen.append(lr)
        return loss_fn(model, batch)

    fit(_model(), with_lr, batch_fn, cfg, show_progress=False, device="cpu")
    assert seen == pytest.approx([cfg.lr * lr_factor(s, cfg) for s in range(6)], rel=1e-12)
    fit(_model(), loss_fn, batch_fn, cfg, show_progress=False, device="cpu")  # no lr: not passed


def test_to_device_moves_objects_with_their_own_to():
    from shared_core.train import to_device

    class Graphs:  # the shape of a torch_geometric Batch: not a Mapping, has .to
        def __init__(self, x: torch.Tensor) -> None:
            self.x = x

        def to(self, device):
            return Graphs(self.x.to(device).double())  # marks that .to was called

    moved = to_device({"g": Graphs(torch.ones(2)), "name": "abc", "n": 3}, "cpu")
    assert moved["g"].x.dtype == torch.float64
    assert moved["name"] == "abc" and moved["n"] == 3
