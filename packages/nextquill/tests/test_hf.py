"""NextQuillTrainer: a transformers.Trainer whose training loss is nextquill_loss."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")


def test_trainer_loss_is_nextquill_loss_and_trains(tmp_path, world, tok):
    from nextquill import NextQuillConfig, encode, nextquill_loss
    from nextquill.hf import NextQuillCollator, NextQuillTrainer
    from nextquill.model import TinyLlamaConfig, tiny_llama

    model = tiny_llama(len(tok), TinyLlamaConfig(hidden=32, layers=1, ff=64), seed=0)
    theta_d = tiny_llama(len(tok), TinyLlamaConfig(hidden=32, layers=1, ff=64), seed=1)
    rows = [
        {"prefix": e.example.prefix, "history": e.example.history, "suffix": e.example.suffix,
         "target": e.example.target}
        for e in world.train[:8]
    ]  # fmt: skip
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=4,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
        learning_rate=1e-3,
        remove_unused_columns=False,
    )
    cfg = NextQuillConfig(alpha=0.3)
    trainer = NextQuillTrainer(
        model=model,
        args=args,
        train_dataset=rows,
        data_collator=NextQuillCollator(tok),
        config=cfg,
        reference_model=theta_d,
    )
    batch = encode(rows[:4], tok)
    model.train()
    with torch.no_grad():
        expected = nextquill_loss(model, batch, cfg, theta_d)
        got = trainer.compute_loss(model, dict(batch))
    assert torch.allclose(got, expected)
    before = [p.detach().clone() for p in model.parameters()]
    trainer.train()
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
    assert all(p.grad is None for p in theta_d.parameters())


def test_trainer_rejects_a_bad_config(tmp_path, tok):
    from nextquill.hf import NextQuillTrainer
    from nextquill.model import TinyLlamaConfig, tiny_llama

    model = tiny_llama(len(tok), TinyLlamaConfig(hidden=32, layers=1, ff=64))
    args = transformers.TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True)
    with pytest.raises(TypeError, match="config: expected a NextQuillConfig"):
        NextQuillTrainer(model=model, args=args, config={"alpha": 0.1})


@pytest.mark.parametrize("form", ["paper", "code"])
def test_trainer_loss_and_gradients_do_not_depend_on_the_accumulation_split(
    tmp_path, world, tok, form
):
    """Acceptance (issue 43): k = 1, 2, 4 accumulation steps over the same global batch of 8
    give the loss and gradients of the objective on the whole batch, within 1e-5 relative."""
    from nextquill import NextQuillConfig, encode, nextquill_loss
    from nextquill.hf import NextQuillCollator, NextQuillTrainer
    from nextquill.loss import batch_dce
    from nextquill.model import TinyLlamaConfig, tiny_llama

    from shared_core.testing import assert_close

    arch = TinyLlamaConfig(hidden=32, layers=1, ff=64)
    # float64: a token whose DCE sits within float32 noise of delta would flip with the padding
    theta_d = tiny_llama(len(tok), arch, seed=1).double() if form == "paper" else None
    # delta 0: a random model's |DCE| is ~1e-3, so the paper's 0.05 would weight all tokens alike
    cfg = NextQuillConfig(
        alpha=0.3, delta=0.0, lp_reduction="weighted" if form == "paper" else "mean"
    )
    # users with and without history, responses of different lengths: uneven micro-batches
    rows = [
        {"prefix": e.example.prefix, "history": e.example.history if i % 3 else "",
         "suffix": e.example.suffix, "target": e.example.target}
        for i, e in enumerate(world.train[:8])
    ]  # fmt: skip
    model = tiny_llama(len(tok), arch, seed=0).double()
    model.train()
    batch = encode(rows, tok)
    flagged = batch_dce(model if theta_d is None else theta_d, batch) > cfg.delta
    assert 0 < int(flagged.sum()) < flagged.numel()  # unequal weights: the totals matter
    expected = nextquill_loss(model, batch, cfg, theta_d)
    expected.backward()
    grads = [p.grad.detach().clone() for p in model.parameters()]
    for k in (1, 2, 4):

        class Grab(transformers.TrainerCallback):
            def on_pre_optimizer_step(self, args, state, control, **kw):
                self.grads = [p.grad.detach().clone() for p in kw["model"].parameters()]

        grab = Grab()
        model = tiny_llama(len(tok), arch, seed=0).double()
        args = transformers.TrainingArguments(
            output_dir=str(tmp_path / f"k{k}"),
            max_steps=1,
            per_device_train_batch_size=8 // k,
            gradient_accumulation_steps=k,
            max_grad_norm=0.0,
            report_to=[],
            use_cpu=True,
            save_strategy="no",
            learning_rate=1e-3,
            remove_unused_columns=False,
        )
        trainer = NextQuillTrainer(
            model=model, args=args, train_dataset=rows, data_collator=NextQuillCollator(tok),
            config=cfg, reference_model=theta_d, callbacks=[grab],
        )  # fmt: skip
        out = trainer.train()
        assert_close(f"loss k={k}", expected.detach(), torch.tensor(out.training_loss), 1e-5)
        for i, (g_ref, g) in enumerate(zip(grads, grab.grads, strict=True)):
            assert_close(f"grad {i} k={k}", g_ref, g, 1e-5, atol=1e-12)


@pytest.fixture(scope="module")
def ddp_result(tmp_path_factory):
    """Rank 0's gradients and logged loss of one step of 2 DDP processes (gloo, CPU) x 2
    accumulation steps x 2 rows, per form (`_nextquill_ddp_worker.py`)."""
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    here = Path(__file__).parent
    out = tmp_path_factory.mktemp("ddp") / "rank0.pt"
    procs = []
    for rank in range(2):
        env = os.environ | {
            "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
            "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
            "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")]),
        }  # fmt: skip
        cmd = [sys.executable, str(here / "_nextquill_ddp_worker.py"), str(out)]
        procs.append(subprocess.Popen(cmd, env=env))
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    return torch.load(out)


@pytest.mark.parametrize("form", ["paper", "code"])
def test_ddp_two_processes_give_the_whole_batch_loss_and_gradients(ddp_result, form):
    """Issue 43: under DDP (2 CPU processes, gloo) x 2 accumulation steps, each rank holding
    different rows with different token counts and weight sums, the logged loss and the
    synchronised gradients of one step are the single-process objective on the whole batch
    of 8, within 1e-5 relative, in both forms."""
    from _nextquill_ddp_worker import ddp_case, model
    from nextquill import encode, nextquill_loss

    from shared_core.testing import assert_close

    rows, tok, cfg, theta_d = ddp_case(form)
    got = ddp_result[form]
    assert got["world"] == 2 and got["processes"] == 2
    whole = model(len(tok))
    whole.train()
    expected = nextquill_loss(whole, encode(rows, tok), cfg, theta_d)
    expected.backward()
    assert_close(f"{form} loss", expected.detach(), torch.tensor(got["loss"]), 1e-5)
    for i, (p, g) in enumerate(zip(whole.parameters(), got["grads"], strict=True)):
        assert_close(f"{form} grad {i}", p.grad, g, 1e-5, atol=1e-12)
