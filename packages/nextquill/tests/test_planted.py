"""Planted signal: after training on the generated task, the data-side detector DCE > delta
finds exactly the tokens the users' synonym maps decide (precision and recall >= 0.9)."""

from __future__ import annotations

import pytest


@pytest.mark.slow  # about 80 s of CPU: 2,000 steps of batch 32 of the tiny Llama
def test_detector_recovers_the_planted_slot_tokens():
    from nextquill.experiments.planted import Config, evaluate, train_arm
    from nextquill.model import word_tokenizer
    from nextquill.world import WorldConfig, make_world

    # noise-free users, one earlier review in the prompt; theta_D trained by ContextSFT
    world_cfg = WorldConfig(users=200, noise=0.0, max_history=1)
    cfg = Config(steps=2000, batch=32, lr=1e-2, world=world_cfg)
    world = make_world(cfg.world, seed=0)
    tok = word_tokenizer(world.vocabulary)
    theta_d = train_arm("sft", world, tok, 0, cfg, "cpu", None)  # the reference model theta_D
    m = evaluate(theta_d, tok, world.test[:96], cfg.loss)
    print(m)
    assert m["det_precision"] >= 0.9
    assert m["det_recall"] >= 0.9
