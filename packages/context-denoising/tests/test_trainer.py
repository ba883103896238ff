"""`CDTTrainer`: gradient accumulation gives the same loss and gradients for any split, the
step perturbs (and is the plain Trainer's at beta = 0), evaluation runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from context_denoising import CDTConfig, sft_loss
from context_denoising.model import tiny_llama
from context_denoising.trainer import CDTTrainer
from transformers import Trainer, TrainerCallback, TrainingArguments

from shared_core.testing import assert_close

VOCAB = 40
ROWS = 8


def rows() -> list[dict[str, torch.Tensor]]:
    """8 rows of 16 tokens, 1-4 answer tokens each (unequal counts), some right-padded."""
    g = torch.Generator().manual_seed(0)
    out = []
    for i in range(ROWS):
        ids = torch.randint(6, VOCAB, (16,), generator=g)
        n_ans, pad = 1 + i % 4, (i * 3) % 5
        attn = torch.ones(16, dtype=torch.long)
        if pad:
            attn[-pad:], ids[-pad:] = 0, 0
        end = 16 - pad
        labels = torch.full_like(ids, -100)
        labels[end - n_ans : end] = ids[end - n_ans : end]
        out.append({"input_ids": ids, "labels": labels, "attention_mask": attn})
    return out


class GradCapture(TrainerCallback):
    def __init__(self) -> None:
        self.grads: dict[str, torch.Tensor] = {}

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        self.grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def one_step(k: int, out: Path, trainer_cls=CDTTrainer, **extra):
    model = tiny_llama(VOCAB, hidden_size=32, seed=1)
    args = TrainingArguments(
        output_dir=str(out),
        per_device_train_batch_size=ROWS // k,
        gradient_accumulation_steps=k,
        max_steps=1,
        learning_rate=1e-2,
        lr_scheduler_type="constant",
        max_grad_norm=0.0,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_strategy="no",
        seed=0,
        disable_tqdm=True,
    )
    cap = GradCapture()
    trainer = trainer_cls(model=model, args=args, train_dataset=rows(), callbacks=[cap], **extra)
    out = trainer.train()
    return out.training_loss, cap.grads, trainer


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cdt-trainer")


@pytest.fixture(scope="module")
def k1(out):
    return one_step(1, out)


@pytest.mark.parametrize("k", [2, 4])
def test_gradient_accumulation_gives_the_same_loss_and_gradients(k1, k, out):
    loss1, grads1, _ = k1
    loss_k, grads_k, _ = one_step(k, out)
    assert loss_k == pytest.approx(loss1, rel=1e-5)
    flat1 = torch.cat([g.flatten() for g in grads1.values()])
    flat_k = torch.cat([grads_k[n].flatten() for n in grads1])
    rel = float((flat_k - flat1).norm() / flat1.norm())
    print(f"k={k}: loss {loss_k:.8f} vs {loss1:.8f}, relative gradient difference {rel:.2e}")
    assert rel < 1e-5
    for n, g in grads1.items():
        assert_close(f"grad {n} k={k}", g, grads_k[n], 1e-5)


def test_beta_zero_is_the_plain_trainer_and_the_default_step_is_not(k1, out):
    _, grads_cdt, trainer = k1
    assert trainer.cdt_config == CDTConfig()
    loss0, grads0, _ = one_step(2, out, cdt_config=CDTConfig(beta=0.0))
    loss_hf, grads_hf, _ = one_step(2, out, trainer_cls=Trainer)
    assert loss0 == pytest.approx(loss_hf, rel=1e-5)
    for n, g in grads_hf.items():
        assert_close(f"grad {n} beta=0 vs Trainer", g, grads0[n], 1e-5)
    diff = sum(float((grads_cdt[n] - g).norm()) for n, g in grads_hf.items())
    assert diff > 1e-6  # sigma = lr * 5 = 0.05 moves the noise embeddings


def test_evaluation_is_the_plain_ce(k1):
    _, _, trainer = k1
    metrics = trainer.evaluate(eval_dataset=rows())
    model = trainer.model.eval()
    batch = {k: torch.stack([r[k] for r in rows()]) for k in rows()[0]}
    with torch.no_grad():
        plain = sft_loss(model, batch)
    assert metrics["eval_loss"] == pytest.approx(float(plain), rel=1e-5)
    assert "context_mask" in trainer._signature_columns  # kept by the column filter


def test_bad_config():
    with pytest.raises(TypeError, match="cdt_config"):
        CDTTrainer(model=tiny_llama(VOCAB, hidden_size=32), cdt_config={"beta": 5})


def test_loss_is_scaled_for_ga_follows_each_call(k1):
    """The loss is divided by ``num_items_in_batch`` only when a count is given: training_step
    must divide by the accumulation steps exactly when it was not (transformers reads
    ``loss_is_scaled_for_ga`` right after `compute_loss`)."""
    _, _, trainer = k1
    model = trainer.model.train()
    batch = {k: torch.stack([r[k] for r in rows()[:2]]) for k in rows()[0]}
    trainer.compute_loss(model, dict(batch), num_items_in_batch=None)
    assert trainer.loss_is_scaled_for_ga is False
    count = int((batch["labels"][:, 1:] != -100).sum())
    trainer.compute_loss(model, dict(batch), num_items_in_batch=torch.tensor(count))
    assert trainer.loss_is_scaled_for_ga is True


def test_transformers_still_counts_shifted_labels_by_loss_shifts_labels(k1):
    """`CDTTrainer` sets transformers' private ``Trainer._loss_shifts_labels`` (5.x) so the
    accumulated batch's answer tokens are counted as ``labels[..., 1:] != -100``, the count
    its loss divides by. A rename in transformers would silently count ``labels != -100``:
    this fails then."""
    _, _, trainer = k1
    assert trainer._loss_shifts_labels is True
    batches = [{k: torch.stack([r[k] for r in rows()[:4]]) for k in rows()[0]}]
    batches[0]["labels"][0, 0] = batches[0]["input_ids"][0, 0]  # position 0 is never predicted
    shifted = int((batches[0]["labels"][..., 1:] != -100).sum())
    unshifted = int((batches[0]["labels"] != -100).sum())
    assert shifted != unshifted  # the batch tells the two rules apart
    assert int(trainer._get_num_items_in_batch(batches, torch.device("cpu"))) == shifted
    trainer._loss_shifts_labels = False
    try:
        assert int(trainer._get_num_items_in_batch(batches, torch.device("cpu"))) == unshifted
    finally:
        trainer._loss_shifts_labels = True


def test_ddp_two_processes_give_the_whole_batch_step(k1, tmp_path):
    """DDP (2 CPU processes, gloo) x 2 accumulation steps x 2 rows: the synchronised gradient
    is that of one process with the 8 rows in one batch, and so is the mean of the ranks'
    losses (each holds rows with different answer-token counts and divides by the count of
    all ranks, times 2; the scoring pass runs through DDP)."""
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
        cmd = [sys.executable, str(here / "_ddp_worker.py"), str(out)]
        procs.append(subprocess.Popen(cmd, env=env))
    codes = [p.wait(timeout=600) for p in procs]
    assert codes == [0, 0], f"the two ranks exited with {codes}"
    ranks = [torch.load(f"{out}.{r}") for r in range(2)]
    assert [got["world"] for got in ranks] == [2, 2]
    loss1, grads1, _ = k1
    assert (ranks[0]["loss"] + ranks[1]["loss"]) / 2 == pytest.approx(loss1, rel=1e-5)
    for r, got in enumerate(ranks):
        assert set(got["grads"]) == set(grads1)
        for n, g in grads1.items():
            assert_close(f"rank {r} grad {n} DDP vs one batch", g, got["grads"][n], 1e-5)
