from __future__ import annotations

import pytest
import torch
import vadd
from conftest import small_config
from masked_diffusion import mdlm_train_config, row_batches

from shared_core.train import fit

KW = dict(show_progress=False, device="cpu", desc="vadd train")


def _data():
    return torch.randint(0, 4, (256, 2), generator=torch.Generator().manual_seed(0))


def test_resume_reproduces_uninterrupted_run(tmp_path):
    loss_fn = vadd.vadd_loss_fn(vadd.ObjectiveConfig(anneal_steps=8))
    batches = row_batches(_data(), 32, seed=0)
    cfg = mdlm_train_config(12, lr=1e-3, warmup=2)
    torch.manual_seed(0)
    full = vadd.VADD(small_config(2))
    r_full = fit(full, loss_fn, batches, cfg, **KW)
    ck = tmp_path / "ck.safetensors"
    torch.manual_seed(0)
    fit(vadd.VADD(small_config(2)), loss_fn, batches, cfg, checkpoint=ck, stop_at=6, **KW)
    torch.manual_seed(1)  # a different init, overwritten by the checkpoint
    resumed = vadd.VADD(small_config(2))
    r_res = fit(resumed, loss_fn, batches, cfg, checkpoint=ck, **KW)
    assert r_res.losses == pytest.approx(r_full.losses, rel=1e-6, abs=1e-7)
    for a, b in zip(full.state_dict().values(), resumed.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b)


def test_kl_annealing_follows_the_batch_step():
    """lambda = min(1, step / anneal_steps) is read from the batch: step 0 has no KL term."""
    torch.manual_seed(0)
    m = vadd.VADD(small_config(2))
    for p in m.recognition.parameters():
        torch.nn.init.normal_(p, std=0.5)  # r far from the prior: a large KL
    batch = row_batches(_data(), 16, seed=0)(0)
    fn = vadd.vadd_loss_fn(vadd.ObjectiveConfig(anneal_steps=4))
    at0 = float(fn(m, batch))
    at4 = float(fn(m, {**batch, "step": 4}))
    assert at4 > at0


def test_training_lowers_the_loss():
    torch.manual_seed(0)
    x = torch.arange(4).repeat_interleave(64)
    data = torch.stack([x, x], dim=1)  # X^1 = X^2
    m = vadd.VADD(small_config(2))
    r = fit(m, vadd.vadd_loss_fn(), row_batches(data, 64, seed=0),
            mdlm_train_config(150, lr=3e-3, warmup=5), **KW)  # fmt: skip
    assert sum(r.losses[-20:]) / 20 < 0.8 * sum(r.losses[:20]) / 20


def test_valid_objective_trains():
    torch.manual_seed(0)
    m = vadd.VADD(small_config(2))
    fn = vadd.vadd_loss_fn(vadd.ObjectiveConfig(objective="valid", steps=2))
    r = fit(m, fn, row_batches(_data(), 16, seed=0), mdlm_train_config(5, lr=1e-3, warmup=1), **KW)
    assert len(r.losses) == 5 and all(torch.isfinite(torch.tensor(r.losses)))


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"objective": "x"}, "objective"),
        ({"anneal_steps": -2}, "anneal_steps"),
        ({"anneal_steps": 2.5}, "anneal_steps"),
        ({"objective": "valid"}, "steps"),
        ({"schedule": "square"}, "schedule"),
    ],
)
def test_bad_objective_config(kw, match):
    with pytest.raises(ValueError, match=match):
        vadd.ObjectiveConfig(**kw)


def test_bad_loss_fn_objective():
    with pytest.raises(TypeError, match="objective"):
        vadd.vadd_loss_fn("paper")
