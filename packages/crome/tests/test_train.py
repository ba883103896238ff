import pytest
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
    hist_straight = train_reward_model(straight, rows, cfg)

    ck = tmp_path / "ck.safetensors"
    first = tiny_rm_factory()
    train_reward_model(first, rows, TrainConfig(**{**cfg.__dict__, "steps": 4}), checkpoint=ck)
    resumed = tiny_rm_factory(99)  # different init: everything must come from the checkpoint
    hist = train_reward_model(resumed, rows, cfg, checkpoint=ck)
    assert [h["step"] for h in hist] == list(range(1, 9))
    assert [h["loss"] for h in hist] == pytest.approx([h["loss"] for h in hist_straight], abs=1e-6)
    for (k, v), (_, u) in zip(
        straight.state_dict().items(), resumed.state_dict().items(), strict=True
    ):
        assert torch.allclose(v, u, atol=1e-6), k


def test_history_has_the_loss_parts(tiny_rm):
    rows = _planted(16)
    ties = [PairRow(r.prompt, r.chosen, r.rejected, label="tie") for r in rows[:8]]
    hist = train_reward_model(
        tiny_rm, rows + ties, TrainConfig(steps=3, batch_size=24, device="cpu", trainable_layers=0)
    )
    assert [h["step"] for h in hist] == [1, 2, 3]
    for h in hist:
        assert set(h) >= {"step", "loss", "lr", "bt", "tie_minus_log2"}
        assert h["tie_minus_log2"] >= -1e-6  # the tie loss is at least log 2
    assert hist[0]["lr"] == TrainConfig().lr_head


def test_two_learning_rates_reach_head_and_encoder(tiny_rm):
    """The head moves at lr_head, the encoder at lr_encoder (AdamW's first step is ~lr)."""
    rows = _planted(16)
    enc0 = tiny_rm.backbone.encoder.layer[-1].output.dense.weight.detach().clone()
    head0 = tiny_rm.head.weight.detach().clone()
    cfg = TrainConfig(
        steps=1, batch_size=16, lr_head=1e-2, lr_encoder=1e-4, weight_decay=0.0, device="cpu"
    )
    train_reward_model(tiny_rm, rows, cfg)
    d_enc = (tiny_rm.backbone.encoder.layer[-1].output.dense.weight.detach() - enc0).abs().max()
    d_head = (tiny_rm.head.weight.detach() - head0).abs().max()
    assert float(d_head) == pytest.approx(1e-2, rel=1e-3)
    assert float(d_enc) == pytest.approx(1e-4, rel=1e-3)


def test_batches_are_a_pure_function_of_step():
    a = [batch_indices(50, s, 8, seed=1) for s in range(12)]
    assert a == [batch_indices(50, s, 8, seed=1) for s in range(12)]
    first_epoch = sorted(i for b in a[:6] for i in b)
    assert len(set(first_epoch)) == len(first_epoch) == 48


def test_train_errors(tiny_rm):
    with pytest.raises(ValueError, match="rows: expected at least one pair"):
        train_reward_model(tiny_rm, [], TrainConfig(device="cpu"))
    with pytest.raises(TypeError, match="rows: expected a sequence of PairRow"):
        train_reward_model(tiny_rm, "What is 1 + 1?", TrainConfig(device="cpu"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"rows\[1\]: expected a PairRow, got dict"):
        row = PairRow("q", "a", "b")
        train_reward_model(tiny_rm, [row, {"prompt": "q"}], TrainConfig(device="cpu"))  # type: ignore[list-item]
    with pytest.raises(TypeError, match="model: expected a crome.RewardModel"):
        train_reward_model(torch.nn.Linear(2, 1), _planted(4), TrainConfig(device="cpu"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="config: expected a crome.TrainConfig"):
        from shared_core.train import TrainConfig as FitConfig

        train_reward_model(tiny_rm, _planted(4), FitConfig())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="trainable_layers: the backbone has 2 layers, got 3"):
        train_reward_model(tiny_rm, _planted(4), TrainConfig(trainable_layers=3, device="cpu"))


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("steps", 0, "steps: expected a positive integer, got 0"),
        ("steps", 2.5, "steps: expected a positive integer, got 2.5"),
        ("batch_size", 0, "batch_size: expected a positive integer, got 0"),
        ("lam", -1.0, "lam: expected a finite non-negative tie weight, got -1.0"),
        ("lam", float("nan"), "lam: expected a finite non-negative tie weight, got nan"),
        ("lr_head", 0.0, "lr_head: expected a finite learning rate > 0, got 0.0"),
        ("lr_encoder", float("inf"), "lr_encoder: expected a finite learning rate > 0"),
        ("weight_decay", -0.1, "weight_decay: expected a finite non-negative weight decay"),
        ("trainable_layers", -2, "trainable_layers: expected -1 .all., 0 .head only."),
        ("trainable_layers", 1.0, "trainable_layers: expected an int, got float"),
        ("seed", -1, "seed: expected a non-negative int, got -1"),
        ("checkpoint_every", -1, "checkpoint_every: expected a non-negative int, got -1"),
    ],
)
def test_train_config_rejects_bad_values(field, value, match):
    with pytest.raises((ValueError, TypeError), match=match):
        TrainConfig(**{field: value})


def test_batch_indices_rejects_no_rows():
    with pytest.raises(ValueError, match="n: expected at least one row, got 0"):
        batch_indices(0, 0, 8, seed=0)
