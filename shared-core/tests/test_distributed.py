import json
import subprocess
import sys
import textwrap

import torch

from shared_core.distributed import DistInfo, all_reduce_mean, init_distributed, shard_indices

WORKER = textwrap.dedent(
    """
    import json, sys
    import torch
    from torch import nn
    from shared_core.distributed import init_distributed, wrap_ddp, all_reduce_mean, is_main, shutdown

    info = init_distributed("cpu")
    torch.manual_seed(0)
    model = wrap_ddp(nn.Linear(3, 1), info)
    x = torch.arange(12.0).reshape(4, 3) + info.rank  # each rank sees different data
    model(x).pow(2).mean().backward()
    grad = model.module.weight.grad.flatten().tolist()
    loss = all_reduce_mean(torch.tensor(float(info.rank)))
    out = {"rank": info.rank, "world": info.world_size, "grad": grad, "mean_rank": float(loss),
           "main": is_main()}
    with open(f"{sys.argv[1]}/rank{info.rank}.json", "w") as f:
        json.dump(out, f)
    shutdown()
    """
)


def test_torchrun_two_processes_agree_on_gradients(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           str(script), str(tmp_path)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    r0, r1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert (r0["world"], r1["world"]) == (2, 2)
    assert r0["main"] and not r1["main"]
    assert r0["grad"] == r1["grad"]  # DDP averaged the gradients
    assert r0["mean_rank"] == 0.5

    # and the averaged gradient is the full-batch gradient of both ranks' data
    torch.manual_seed(0)
    ref = torch.nn.Linear(3, 1)
    x = torch.cat([torch.arange(12.0).reshape(4, 3) + r for r in (0, 1)])
    ref(x).pow(2).mean().backward()
    torch.testing.assert_close(torch.tensor(r0["grad"]), ref.weight.grad.flatten())


def test_single_process_fallback(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    info = init_distributed("cpu")
    assert info == DistInfo(0, 1, 0, torch.device("cpu"))
    assert info.is_main and not info.enabled
    assert all_reduce_mean(3.0) == 3.0
    assert list(shard_indices(5, DistInfo(1, 2))) == [1, 3]


def test_bad_environment(monkeypatch):
    import pytest

    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE"):
        init_distributed("cpu")
