"""Dist2Trainer: a transformers.Trainer whose loss is causal_dist2_loss."""

from __future__ import annotations

import pytest
import torch
from dist2loss import causal_dist2_loss, number_table

from shared_core.testing import assert_close

transformers = pytest.importorskip("transformers")


def _tiny_llama(vocab: int):
    from shared_core.models import tiny_llama

    return tiny_llama(
        vocab, hidden_size=32, intermediate_size=64, num_layers=1, num_heads=4, num_kv_heads=2,
        max_positions=32,
    )  # fmt: skip


def test_trainer_loss_is_causal_dist2_loss_and_trains(tmp_path):
    from dist2loss.hf import Dist2Trainer

    vocab = 24
    table = number_table({4 + i: float(i) for i in range(20)}, vocab)
    model = _tiny_llama(vocab)
    g = torch.Generator().manual_seed(0)
    rows = [
        {"input_ids": ids, "labels": ids.clone()}
        for ids in torch.randint(1, vocab, (8, 12), generator=g)
    ]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=4,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
        learning_rate=1e-3,
    )
    trainer = Dist2Trainer(
        model=model, args=args, train_dataset=rows, metric=table, tau=2.0, alpha=0.5
    )
    batch = {
        "input_ids": torch.stack([r["input_ids"] for r in rows[:4]]),
        "labels": torch.stack([r["labels"] for r in rows[:4]]),
    }
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"]).logits
        expected = causal_dist2_loss(logits, batch["labels"], table, tau=2.0, alpha=0.5)
        got = trainer.compute_loss(model, dict(batch))
    assert torch.allclose(got, expected)
    before = [p.detach().clone() for p in model.parameters()]
    out = trainer.train()
    assert out.global_step == 2 and torch.isfinite(torch.tensor(out.training_loss))
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_trainer_rejects_bad_arguments(tmp_path):
    from dist2loss.hf import Dist2Trainer

    table = number_table({1: 0.0, 2: 1.0}, 8)
    with pytest.raises(TypeError, match="metric: expected a MetricTable"):
        Dist2Trainer(model=_tiny_llama(8), metric={1: 0.0})
    with pytest.raises(ValueError, match="tau"):
        Dist2Trainer(model=_tiny_llama(8), metric=table, tau=0.0)
    with pytest.raises(ValueError, match="normalise: expected one of"):
        Dist2Trainer(model=_tiny_llama(8), metric=table, normalise="batch")
    with pytest.raises(ValueError, match="negatives: expected fewer than"):
        Dist2Trainer(model=_tiny_llama(8), metric=table, negatives=2)


def _ragged_rows(vocab: int, n: int = 8, length: int = 12):
    """n sequences whose labels are -100 on ragged tails: micro-batch means differ from the
    global mean, so a per-micro-batch average would be caught."""
    g = torch.Generator().manual_seed(3)
    rows = []
    for i, ids in enumerate(torch.randint(1, vocab, (n, length), generator=g)):
        labels = ids.clone()
        labels[length - 1 - (7 * i) % (length - 2) :] = -100
        rows.append({"input_ids": ids, "labels": labels})
    return rows


@pytest.mark.parametrize("normalise", ["tokens", "metric"])
def test_gradient_accumulation_gives_the_same_loss_and_gradients(tmp_path, normalise):
    """Acceptance (issue 39): k = 1, 2, 4 accumulation steps over the same global batch of 8
    give the same loss and gradients (1e-5 relative) as the loss of the whole batch at once."""
    from dist2loss.hf import Dist2Trainer

    vocab = 24
    table = number_table({4 + i: float(i) for i in range(20)}, vocab)
    rows = _ragged_rows(vocab)
    kw = {"tau": 2.0, "alpha": 0.5, "negatives": 2, "normalise": normalise}

    # the whole batch in one call, on the initial weights
    model = _tiny_llama(vocab)
    batch = {k: torch.stack([r[k] for r in rows]) for k in ("input_ids", "labels")}
    loss = causal_dist2_loss(
        model(input_ids=batch["input_ids"]).logits, batch["labels"], table, **kw
    )
    loss.backward()
    expected_grads = [p.grad.detach().clone() for p in model.parameters()]

    class Grab(transformers.TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, model=None, **_):
            self.grads = [p.grad.detach().clone() for p in model.parameters()]

    for k in (1, 2, 4):
        grab = Grab()
        args = transformers.TrainingArguments(
            output_dir=str(tmp_path / str(k)),
            max_steps=1,
            per_device_train_batch_size=8 // k,
            gradient_accumulation_steps=k,
            max_grad_norm=0.0,  # no clipping: the raw accumulated gradient
            report_to=[],
            use_cpu=True,
            save_strategy="no",
            learning_rate=1e-3,
        )
        trainer = Dist2Trainer(
            model=_tiny_llama(vocab),
            args=args,
            train_dataset=rows,
            metric=table,
            callbacks=[grab],
            **kw,
        )
        out = trainer.train()
        assert_close(
            f"loss, k={k}", loss.detach().reshape(1), torch.tensor([out.training_loss]), 1e-5
        )
        for i, (e, g) in enumerate(zip(expected_grads, grab.grads, strict=True)):
            assert_close(f"grad {i}, k={k}", e, g, 1e-5)


def _whole_batch_reference(kw):
    vocab = 24
    table = number_table({4 + i: float(i) for i in range(20)}, vocab)
    rows = _ragged_rows(vocab)
    model = _tiny_llama(vocab)
    batch = {k: torch.stack([r[k] for r in rows]) for k in ("input_ids", "labels")}
    loss = causal_dist2_loss(
        model(input_ids=batch["input_ids"]).logits, batch["labels"], table, **kw
    )
    loss.backward()
    return loss.detach(), [p.grad.detach().clone() for p in model.parameters()]


@pytest.mark.slow
@pytest.mark.parametrize("normalise", ["tokens", "metric"])
def test_ddp_two_processes_give_the_whole_batch_gradient(tmp_path, normalise):
    """DDP (2 CPU processes, gloo) x 2 accumulation steps: the synchronised gradient is the
    whole batch's (each process holds different sequences with different label counts)."""
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    here = Path(__file__).parent
    out = tmp_path / "rank0.pt"
    procs = []
    for rank in range(2):
        env = os.environ | {
            "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
            "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
            "PYTHONPATH": os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")]),
        }  # fmt: skip
        cmd = [sys.executable, str(here / "_ddp_worker.py"), str(out), normalise]
        procs.append(subprocess.Popen(cmd, env=env))
    codes = [p.wait(timeout=600) for p in procs]
    assert codes == [0, 0], f"the two ranks exited with {codes}"
    got = torch.load(out)
    assert got["world"] == 2
    _, grads = _whole_batch_reference(
        {"tau": 2.0, "alpha": 0.5, "negatives": 2, "normalise": normalise}
    )
    for i, (e, g) in enumerate(zip(grads, got["grads"], strict=True)):
        assert_close(f"grad {i}", e, g, 1e-5)
