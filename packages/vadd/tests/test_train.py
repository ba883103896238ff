from __future__ import annotations

import pytest
import torch
import vadd
from conftest import small_config
from masked_diffusion import TrainConfig


def _data():
    return torch.randint(0, 4, (256, 2), generator=torch.Generator().manual_seed(0))


def test_resume_reproduces_uninterrupted_run(tmp_path):
    obj = vadd.ObjectiveConfig(anneal_steps=8)
    cfg = TrainConfig(steps=12, batch_size=32, warmup=2, show_progress=False, device="cpu")
    torch.manual_seed(0)
    full = vadd.VADD(small_config(2))
    r_full = vadd.train_vadd(full, _data(), cfg, obj)
    ck = str(tmp_path / "ck.pt")
    cfg_ck = TrainConfig(
        steps=12, batch_size=32, warmup=2, show_progress=False, device="cpu", checkpoint_path=ck
    )
    torch.manual_seed(0)
    part = vadd.VADD(small_config(2))
    vadd.train_vadd(part, _data(), cfg_ck, obj, stop_at=6)
    torch.manual_seed(1)  # a different init, overwritten by the checkpoint
    resumed = vadd.VADD(small_config(2))
    r_res = vadd.train_vadd(resumed, _data(), cfg_ck, obj, resume=True)
    assert r_res.losses == pytest.approx(r_full.losses, rel=1e-6, abs=1e-7)
    assert int(resumed.anneal_step) == int(full.anneal_step) == 12
    for a, b in zip(full.state_dict().values(), resumed.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b)


def test_training_lowers_the_loss():
    torch.manual_seed(0)
    x = torch.arange(4).repeat_interleave(64)
    data = torch.stack([x, x], dim=1)  # X^1 = X^2
    m = vadd.VADD(small_config(2))
    r = vadd.train_vadd(
        m,
        data,
        TrainConfig(steps=150, batch_size=64, lr=3e-3, warmup=5, show_progress=False, device="cpu"),
    )
    assert sum(r.losses[-20:]) / 20 < 0.8 * sum(r.losses[:20]) / 20


def test_valid_objective_trains():
    torch.manual_seed(0)
    m = vadd.VADD(small_config(2))
    r = vadd.train_vadd(
        m,
        _data(),
        TrainConfig(steps=5, batch_size=16, show_progress=False, device="cpu"),
        vadd.ObjectiveConfig(objective="valid", steps=2),
    )
    assert len(r.losses) == 5 and all(torch.isfinite(torch.tensor(r.losses)))


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"objective": "x"}, "objective"),
        ({"anneal_steps": -2}, "anneal_steps"),
        ({"objective": "valid"}, "steps"),
    ],
)
def test_bad_objective_config(kw, match):
    with pytest.raises(ValueError, match=match):
        vadd.ObjectiveConfig(**kw)
