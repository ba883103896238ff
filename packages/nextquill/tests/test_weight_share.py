"""A theta_D that tells no token apart (every DCE <= delta) makes every weight eps and L_n
ContextSFT: the run says so once, with the share of tokens over delta, and records the share."""

from __future__ import annotations

import warnings

import pytest
import torch
from nextquill import AllWeightsEpsWarning, PreferenceShare, encode


def test_preference_share_warns_once_with_the_runs_share():
    share = PreferenceShare(0.05)
    assert share.update(torch.tensor([0.2, 0.01, 0.3, 0.0])) == 0.5
    with pytest.warns(AllWeightsEpsWarning, match=r"delta = 0\.05.*33\.3% of 6 tokens"):
        assert share.update(torch.tensor([0.05, -0.4])) == 0.0  # 0.05 is not > 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert share.update(torch.tensor([0.0, 0.0])) == 0.0  # once per run
    assert share.share == pytest.approx(2 / 8)


def test_a_fresh_reference_warns_once_per_run_and_logs_the_share(world, tok):
    from nextquill import NextQuillConfig
    from nextquill.experiments.arms import make_loss
    from nextquill.model import TinyLlamaConfig, tiny_llama

    small = TinyLlamaConfig(hidden=32, layers=1, ff=64)
    model, theta_d = tiny_llama(len(tok), small, seed=0), tiny_llama(len(tok), small, seed=1)
    rows = [e.example for e in world.train[:4]]
    batch = encode(rows, tok)
    loss_fn = make_loss("nextquill", NextQuillConfig(), theta_d)
    with pytest.warns(AllWeightsEpsWarning, match=r"share over delta in this run so far: 0\.0%"):
        _, parts = loss_fn(model, batch)
    assert parts["over_delta"] == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", AllWeightsEpsWarning)
        _, parts = loss_fn(model, batch)
    # a reference whose DCE is over delta everywhere (delta below every DCE) is silent
    quiet = make_loss("ln", NextQuillConfig(delta=-1.0), theta_d)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AllWeightsEpsWarning)
        _, parts = quiet(model, batch)
    assert parts["over_delta"] == 1.0


def test_trainer_logs_the_share_and_warns_once(tmp_path, world, tok):
    transformers = pytest.importorskip("transformers")
    from nextquill.hf import NextQuillCollator, NextQuillTrainer
    from nextquill.model import TinyLlamaConfig, tiny_llama

    small = TinyLlamaConfig(hidden=32, layers=1, ff=64)
    rows = [
        {"prefix": e.example.prefix, "history": e.example.history, "suffix": e.example.suffix,
         "target": e.example.target}
        for e in world.train[:8]
    ]  # fmt: skip
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, report_to=[],
        use_cpu=True, save_strategy="no", logging_steps=1, learning_rate=1e-3,
        remove_unused_columns=False, disable_tqdm=True,
    )  # fmt: skip
    trainer = NextQuillTrainer(
        model=tiny_llama(len(tok), small, seed=0),
        args=args,
        train_dataset=rows,
        data_collator=NextQuillCollator(tok),
        reference_model=tiny_llama(len(tok), small, seed=1),
    )
    with pytest.warns(AllWeightsEpsWarning) as caught:
        trainer.train()
    assert sum(isinstance(w.message, AllWeightsEpsWarning) for w in caught) == 1
    logged = [h["over_delta"] for h in trainer.state.log_history if "loss" in h]
    assert logged == [0.0, 0.0]
