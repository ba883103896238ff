"""Planted signal: after training on the generated task, the data-side detector DCE > delta
finds exactly the tokens the users' synonym maps decide (precision and recall >= 0.9)."""

from __future__ import annotations

import pytest


@pytest.mark.slow  # about 70 s of CPU: 1,500 steps of the tiny Llama
def test_detector_recovers_the_planted_slot_tokens():
    from nextquill.experiments.planted import Config, evaluate, train_arm
    from nextquill.model import word_tokenizer
    from nextquill.world import WorldConfig, make_world

    cfg = Config(steps=1500, lr=6e-3, world=WorldConfig(users=100, noise=0.0))
    world = make_world(cfg.world, seed=0)
    tok = word_tokenizer(world.vocabulary)
    theta_d = train_arm("sft", world, tok, 0, cfg, "cpu", None)  # the reference model theta_D
    m = evaluate(theta_d, tok, world.test[:96], cfg.loss)
    print(m)
    assert m["det_precision"] >= 0.9
    assert m["det_recall"] >= 0.9
