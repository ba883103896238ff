import pytest
import torch
from torch import nn

from shared_core.checkpoint import load_checkpoint, save_checkpoint
from shared_core.device import seed_everything


def _setup():
    seed_everything(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    return model, opt, sched


def _train(model, opt, sched, steps):
    losses = []
    for _ in range(steps):
        x = torch.randn(8, 4)  # drawn from the global RNG: resumption must restore it
        loss = (model(x).squeeze(-1) - x.sum(-1)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses


def test_resume_equals_uninterrupted(tmp_path):
    n, k = 10, 4
    model, opt, sched = _setup()
    full = _train(model, opt, sched, n)

    model, opt, sched = _setup()
    first = _train(model, opt, sched, k)
    path = save_checkpoint(
        tmp_path / "ckpt.safetensors", model=model, optimizer=opt, scheduler=sched, step=k
    )
    _train(model, opt, sched, 3)  # diverge the live objects and RNG before loading

    model2, opt2, sched2 = _setup()
    state = load_checkpoint(path, model=model2, optimizer=opt2, scheduler=sched2)
    assert state["step"] == k
    rest = _train(model2, opt2, sched2, n - k)
    assert first + rest == pytest.approx(full, abs=1e-6)


def test_extra_round_trip_and_errors(tmp_path):
    model, opt, _ = _setup()
    path = save_checkpoint(
        tmp_path / "c.safetensors", model=model, step=2, extra={"best": 0.5, "tags": ["a"]}
    )
    assert load_checkpoint(path, model=model)["extra"] == {"best": 0.5, "tags": ["a"]}
    with pytest.raises(ValueError, match="optimizer"):
        load_checkpoint(path, model=model, optimizer=opt)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        load_checkpoint(tmp_path / "missing.safetensors", model=model)


def test_interrupted_save_keeps_previous_checkpoint(tmp_path, monkeypatch):
    model, _, _ = _setup()
    path = save_checkpoint(tmp_path / "c.safetensors", model=model, step=1)
    before = path.read_bytes()

    import safetensors.torch

    def crash(tensors, filename, metadata=None):
        with open(filename, "wb") as f:
            f.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(safetensors.torch, "save_file", crash)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, model=model, step=2)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["c.safetensors"]


def test_corrupt_checkpoint_names_the_file_and_the_fix(tmp_path):
    model, opt, _ = _setup()
    path = save_checkpoint(tmp_path / "ckpt.safetensors", model=model, optimizer=opt, step=1)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # truncated, as by a full disk
    with pytest.raises(
        ValueError, match=r"ckpt\.safetensors is not a readable checkpoint.*delete it"
    ):
        load_checkpoint(path, model=model, optimizer=opt)
