import torch
from crome import world as W
from crome.data import PairRow
from crome.evaluate import pairwise_accuracy
from crome.train import TrainConfig, batch_indices, train_reward_model


def _planted(n=48):
    """Chosen answers say 'good', rejected ones 'poor': a signal a tiny model must pick up."""
    w = W.make_world(W.WorldConfig(n_train=n, n_test=1, seed=4))
    return [
        PairRow(r.prompt, "good " + r.rejected, "poor " + r.chosen, subset="planted")
        for r in w.train
    ]


def test_planted_signal_is_recovered(tiny_rm):
    rows = _planted()
    before = pairwise_accuracy(tiny_rm, rows)["planted"]
    cfg = TrainConfig(
        steps=40, batch_size=16, lr_encoder=3e-3, lr_head=1e-2, trainable_layers=-1, device="cpu"
    )
    hist = train_reward_model(tiny_rm, rows, cfg)
    assert pairwise_accuracy(tiny_rm, rows)["planted"] == 1.0 > before
    assert hist[-1]["loss"] < hist[0]["loss"]


def test_tie_rows_pull_margins_to_zero(tiny_rm):
    w = W.make_world(W.WorldConfig(n_train=32, n_test=1, seed=4))
    rows = [PairRow(r.prompt, r.chosen, r.rejected, label="tie") for r in w.train]
    q, a, b = [r.prompt for r in rows], [r.chosen for r in rows], [r.rejected for r in rows]
    start = tiny_rm.margins(q, a, b).abs().mean()
    train_reward_model(
        tiny_rm,
        rows,
        TrainConfig(
            steps=30,
            batch_size=16,
            lr_head=1e-2,
            lr_encoder=3e-3,
            trainable_layers=-1,
            device="cpu",
        ),
    )
    assert tiny_rm.margins(q, a, b).abs().mean() < 0.25 * start


def test_resume_from_checkpoint_gives_the_same_model(tiny_rm_factory, tmp_path):
    rows = _planted(32)
    cfg = TrainConfig(
        steps=8, batch_size=8, trainable_layers=-1, device="cpu", checkpoint_every=4, seed=3
    )
    straight = tiny_rm_factory()
    train_reward_model(straight, rows, cfg)

    ck = tmp_path / "ck.safetensors"
    first = tiny_rm_factory()
    train_reward_model(first, rows, TrainConfig(**{**cfg.__dict__, "steps": 4}), checkpoint=ck)
    resumed = tiny_rm_factory(seed=99)  # different init: everything must come from the checkpoint
    hist = train_reward_model(resumed, rows, cfg, checkpoint=ck)
    assert [h["step"] for h in hist] == [5, 6, 7, 8]
    for (k, v), (_, u) in zip(
        straight.state_dict().items(), resumed.state_dict().items(), strict=True
    ):
        assert torch.allclose(v, u, atol=1e-6), k


def test_batches_are_a_pure_function_of_step():
    a = [batch_indices(50, s, 8, seed=1) for s in range(12)]
    assert a == [batch_indices(50, s, 8, seed=1) for s in range(12)]
    first_epoch = sorted(i for b in a[:6] for i in b)
    assert len(set(first_epoch)) == len(first_epoch) == 48


def test_train_errors(tiny_rm):
    import pytest

    with pytest.raises(ValueError, match="rows"):
        train_reward_model(tiny_rm, [], TrainConfig(device="cpu"))
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="lam"):
        TrainConfig(lam=-1)
