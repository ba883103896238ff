"""Planted signal: after training on the generated task, the data-side detector DCE > delta
finds exactly the tokens the users' synonym maps decide (precision and recall >= 0.9)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


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


def test_code_form_arms_are_the_code_objective(model64, tok, examples):
    """ln_code: self-weighted L_n; lp_code: token-mean CE of Delta; reference ignored."""
    from dataclasses import replace

    from nextquill import NextQuillConfig, encode, nextquill_terms
    from nextquill.experiments.arms import make_loss

    batch = encode(examples, tok)
    cfg = NextQuillConfig()
    other = model64  # a reference the code form must not use
    code = replace(cfg, lp_reduction="mean")
    ln, _ = make_loss("ln_code", cfg, other)(model64, batch)
    lp, _ = make_loss("lp_code", cfg, other)(model64, batch)
    nq, _ = make_loss("nextquill_code", cfg, other)(model64, batch)
    full = nextquill_terms(model64, batch, code)
    torch.testing.assert_close(ln, full.l_n)
    torch.testing.assert_close(lp, full.l_p)
    torch.testing.assert_close(nq, full.l_n + 0.1 * full.l_p)
    ce_delta = torch.nn.functional.cross_entropy(*_delta_logits(model64, batch), reduction="mean")
    torch.testing.assert_close(lp, ce_delta)


def _delta_logits(model, batch):
    from nextquill.loss import both_passes

    lw, l0, y = both_passes(model, batch)
    return lw - l0, y


def test_make_loss_rejects_an_unknown_arm():
    from nextquill import NextQuillConfig
    from nextquill.experiments.arms import make_loss

    with pytest.raises(ValueError, match="arm: expected one of"):
        make_loss("dpo", NextQuillConfig(), None)


def test_paired_differences_interval():
    from nextquill.experiments.planted import paired_differences

    results = {
        "sft": [{"slot_acc": 0.4, "rouge1": 0.3}, {"slot_acc": 0.5, "rouge1": 0.3},
                {"slot_acc": 0.6, "rouge1": 0.3}],
        "ln": [{"slot_acc": 0.5, "rouge1": 0.3}, {"slot_acc": 0.7, "rouge1": 0.3},
               {"slot_acc": 0.6, "rouge1": 0.3}],
    }  # fmt: skip
    d = paired_differences(results)
    assert set(d) == {("ln", "sft")}
    mean, lo, hi = d["ln", "sft"]["slot_acc"]
    # differences 0.1, 0.2, 0.0: mean 0.1, sd 0.1, t(0.975, 2) = 4.3027
    assert mean == pytest.approx(0.1)
    assert hi - mean == pytest.approx(4.302653 * 0.1 / 3**0.5, rel=1e-5)
    assert mean - lo == pytest.approx(hi - mean)
    assert d["ln", "sft"]["rouge1"] == pytest.approx((0.0, 0.0, 0.0), abs=1e-12)


def test_no_import_cycle_between_the_experiments():
    """smollm2 takes the arms from `arms`, not from `planted` (issue 43)."""
    import ast
    import inspect

    from nextquill.experiments import arms, smollm2

    for mod in (smollm2, arms):
        tree = ast.parse(inspect.getsource(mod))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "nextquill.experiments.planted" not in imported, mod.__name__


def test_planted_does_not_import_the_ablation_built_on_it():
    """ablation takes Config, training and evaluation from planted; `--ablate` is dispatched by
    `experiments.reproduce`, so planted never imports ablation back (issue 68)."""
    import ast
    import inspect

    from nextquill.experiments import planted

    tree = ast.parse(inspect.getsource(planted))
    imported = {
        f"{n.module}.{a.name}"
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom)
        for a in n.names
    } | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(name and name.startswith("nextquill.experiments.ablation") for name in imported)


def test_small_is_the_papers_ablation_with_a_trained_theta_d():
    """small compares NextQuill with L_n only (paper form) and ContextSFT over >= 3 seeds,
    with theta_D trained on D for 4x an arm's steps, as tiny does."""
    from nextquill.experiments.planted import PAIRS, SCALES

    small, tiny = SCALES["small"], SCALES["tiny"]
    assert {"sft", "ln", "nextquill"} <= set(small.arms)
    assert ("nextquill", "ln") in PAIRS
    assert small.seeds >= 3 and not small.smollm2
    assert small.reference_steps == 4 * small.steps
    assert tiny.reference_steps == 4 * tiny.steps
