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
