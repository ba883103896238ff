import pytest
import torch
from masked_diffusion import (
    BackboneConfig,
    LogLinearSchedule,
    MaskedDiffusionTransformer,
    TrainConfig,
    digits_grid,
    mdlm_loss,
    nelbo,
    shakespeare_chars,
    train,
)


def _setup():
    data = digits_grid(levels=4)
    torch.manual_seed(0)
    model = MaskedDiffusionTransformer(
        BackboneConfig(4, 64, 32, 2, 1, grid=(8, 8), learned_positions=True)
    )
    sched = LogLinearSchedule()

    def loss_fn(m, batch, g):
        return mdlm_loss(lambda x, t: m(x, t), batch, sched, 4, generator=g).loss

    return data, model, loss_fn, sched


def test_training_lowers_nelbo_and_resume_is_exact(tmp_path):
    data, model, loss_fn, sched = _setup()
    cfg = TrainConfig(
        steps=30,
        batch_size=32,
        lr=3e-3,
        warmup=5,
        device="cpu",
        checkpoint_path=str(tmp_path / "a.safetensors"),
        show_progress=False,
    )
    before = nelbo(lambda x, t: model(x, t), data.val, sched, 4, n_samples=2)
    full = train(model, loss_fn, data.train, cfg)
    after = nelbo(lambda x, t: model(x, t), data.val, sched, 4, n_samples=2)
    assert after < before - 0.1

    _, model2, _, _ = _setup()
    cfg2 = TrainConfig(**{**cfg.__dict__, "checkpoint_path": str(tmp_path / "b.safetensors")})
    part = train(model2, loss_fn, data.train, cfg2, stop_at=15)
    assert part.step == 15
    _, model3, _, _ = _setup()
    torch.manual_seed(123)  # resume must not depend on the ambient RNG
    resumed = train(model3, loss_fn, data.train, cfg2, resume=True)
    assert resumed.step == 30
    assert resumed.losses == pytest.approx(full.losses, rel=1e-6, abs=1e-7)
    for p, q in zip(model.parameters(), model3.parameters(), strict=True):
        torch.testing.assert_close(p, q)


def test_data_splits_are_deterministic_and_valid():
    a, b = shakespeare_chars(seq_len=32, plays=1), shakespeare_chars(seq_len=32, plays=1)
    assert torch.equal(a.val, b.val) and a.train.shape[1] == 32
    assert int(a.train.max()) < a.vocab_size
    d = digits_grid(levels=3)
    assert d.train.shape[1] == 64 and int(d.train.max()) == 2
    assert len(d.train) + len(d.val) + len(d.test) == 1797
    with pytest.raises(ValueError, match="levels"):
        digits_grid(levels=1)
    with pytest.raises(ValueError, match="seq_len"):
        shakespeare_chars(seq_len=0)
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0)
