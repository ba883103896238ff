"""The batched objective against the token-by-token oracle, its limit cases and invariances."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
from nextquill import NextQuillConfig, encode, encode_one, nextquill_from_logits, nextquill_terms
from nextquill.reference import reference_terms

from shared_core.testing import assert_close

# fast path dtype -> allowed relative RMS error against the float64 oracle
RATIOS = {torch.float64: 1e-10, torch.float32: 1e-5}
CONFIGS = [
    NextQuillConfig(),
    NextQuillConfig(lp_reduction="mean", alpha=0.5, lam=0.7, eps=0.3),
]


def split_delta(dce):
    """A threshold between the two middle distinct DCE values of a random model, so both
    weights occur and no token sits within rounding error of the threshold."""
    values = sorted(set(dce))
    mid = len(values) // 2
    return (values[mid - 1] + values[mid]) / 2


@pytest.mark.parametrize("dtype", list(RATIOS), ids=str)
@pytest.mark.parametrize("cfg", CONFIGS, ids=["paper", "code"])
def test_batched_equals_oracle(model64, tok, examples, cfg, dtype, device):
    encoded = [encode_one(e, tok) for e in examples]
    # the oracle runs on `device` too: transformers' Llama computes RoPE in float32 even in a
    # float64 model, and float32 cos/sin differ by an ulp between CPU and CUDA
    model64.to(device)
    cfg = replace(cfg, delta=split_delta(reference_terms(model64, encoded, cfg)["dce"]))
    ref = reference_terms(model64, encoded, cfg)
    assert 0 < sum(d > cfg.delta for d in ref["dce"]) < len(ref["dce"])  # both weights used
    model = model64.to(device=device, dtype=dtype)
    batch = {k: v.to(device) for k, v in encode(examples, tok).items()}
    t = nextquill_terms(model, batch, cfg)
    ratio = RATIOS[dtype]
    for name in ("loss", "l_n", "l_p"):
        assert_close(name, torch.tensor(ref[name], dtype=torch.float64), getattr(t, name), ratio)
    assert_close("dce", torch.tensor(ref["dce"], dtype=torch.float64), t.dce, ratio)
    if dtype == torch.float64:
        assert t.targets.tolist() == ref["targets"]
        assert_close("weights", torch.tensor(ref["weights"], dtype=torch.float64), t.weights, ratio)


def test_reference_model_gives_the_weights(model64, tok, examples):
    from nextquill.model import TinyLlamaConfig, tiny_llama

    theta_d = tiny_llama(len(tok), TinyLlamaConfig(hidden=32, layers=2, ff=64), seed=1).double()
    encoded = [encode_one(e, tok) for e in examples]
    cfg = NextQuillConfig(delta=split_delta(reference_terms(theta_d, encoded)["dce"]))
    ref = reference_terms(model64, encoded, cfg, theta_d)
    own = reference_terms(model64, encoded, cfg)
    assert ref["weights"] != own["weights"]
    t = nextquill_terms(model64, encode(examples, tok), cfg, reference_model=theta_d)
    assert_close("loss", torch.tensor(ref["loss"], dtype=torch.float64), t.loss, 1e-10)
    assert_close("dce", torch.tensor(ref["dce"], dtype=torch.float64), t.dce, 1e-10)
    t.loss.backward()
    assert all(p.grad is None for p in theta_d.parameters())  # theta_D stays frozen


@pytest.mark.parametrize("side", ["left", "right"])
def test_equal_weights_and_no_lp_is_huggingface_mean_ce(model64, tok, examples, side):
    model = model64.float()  # Hugging Face's causal-LM loss computes in float32
    batch = encode(examples, tok, padding_side=side)
    t = nextquill_terms(model, batch, NextQuillConfig(alpha=0.0, lam=0.3, eps=0.3))
    position_ids = (batch["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    hf = model(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        position_ids=position_ids,
        labels=batch["labels"],
    ).loss
    assert_close("loss", hf, t.loss, 1e-6)


def test_weights_sum_to_one_over_response_tokens_only(model64, tok, examples):
    batch = encode(examples, tok)
    t = nextquill_terms(model64, batch, NextQuillConfig(delta=0.0))
    high, low = 0.9 / (0.9 * int((t.dce > 0).sum()) + 0.1 * int((t.dce <= 0).sum())), None
    n_valid = int((batch["labels"][:, 1:] != -100).sum())
    assert t.weights.shape == (n_valid,)
    assert abs(float(t.weights.sum()) - 1.0) < 1e-12
    low = high / 9
    expected = torch.full_like(t.dce, low).masked_fill(t.dce > 0, high)
    assert_close("weights", expected, t.weights, 1e-12)
    # what sits under padding or the prompt cannot change the loss: scramble it
    scrambled = {k: v.clone() for k, v in batch.items()}
    for key in ("input_ids", "input_ids_without_history"):
        mask = batch[key.replace("input_ids", "attention_mask")] == 0
        scrambled[key][mask] = torch.randint(4, len(tok), (int(mask.sum()),))
    t2 = nextquill_terms(model64, scrambled, NextQuillConfig(delta=0.0))
    assert_close("l_n", t.l_n, t2.l_n, 1e-10)
    assert_close("l_p", t.l_p, t2.l_p, 1e-10)
    assert not t.weights.requires_grad and not t.dce.requires_grad


def test_empty_history_gives_zero_effect_log_vocab_and_zero_gradient(model64, tok, examples):
    from nextquill import Example

    blank = [Example(e.prefix, "", e.suffix, e.target) for e in examples]
    batch = encode(blank, tok)
    assert torch.equal(batch["input_ids"], batch["input_ids_without_history"])
    t = nextquill_terms(model64, batch)
    assert float(t.dce.abs().max()) == 0.0
    assert abs(float(t.l_p) - math.log(len(tok))) < 1e-12
    t.l_p.backward()
    grads = [p.grad for p in model64.parameters() if p.grad is not None]
    assert grads and max(float(g.abs().max()) for g in grads) < 1e-12


@pytest.mark.parametrize("which", ["with", "without"])
def test_lp_invariant_to_per_position_constants(which):
    g = torch.Generator().manual_seed(0)
    lw, l0 = (
        torch.randn(30, 11, generator=g, dtype=torch.float64),
        torch.randn(30, 11, generator=g, dtype=torch.float64),
    )
    y = torch.randint(0, 11, (30,), generator=g)
    shift = 100 * torch.randn(30, 1, generator=g, dtype=torch.float64)
    base = nextquill_from_logits(lw, l0, y)
    moved = (
        nextquill_from_logits(lw + shift, l0, y)
        if which == "with"
        else nextquill_from_logits(lw, l0 + shift, y)
    )
    assert_close("l_p", base.l_p, moved.l_p, 1e-12)
    assert torch.equal(base.weights, moved.weights)


def test_left_and_right_padding_give_the_same_loss_and_gradient(model64, tok, examples):
    encoded = [encode_one(e, tok) for e in examples]
    cfg = NextQuillConfig(delta=split_delta(reference_terms(model64, encoded)["dce"]))
    out = {}
    for side in ("left", "right"):
        model64.zero_grad()
        t = nextquill_terms(model64, encode(examples, tok, padding_side=side), cfg)
        t.loss.backward()
        out[side] = (t.loss.detach(), torch.cat([p.grad.flatten() for p in model64.parameters()]))
    assert_close("loss", out["left"][0], out["right"][0], 1e-10)
    assert_close("grad", out["left"][1], out["right"][1], 1e-9)


def test_window_totals_split_the_objective_into_summable_parts(model64, tok, examples):
    """A batch's loss is the sum of its halves' losses when both are normalised by the whole
    batch's weight sum and token count (what NextQuillTrainer does per accumulation window)."""
    from nextquill import NextQuillConfig, encode, nextquill_terms
    from nextquill.loss import batch_dce, raw_weights

    for lp in ("weighted", "mean"):
        cfg = NextQuillConfig(alpha=0.5, delta=0.0, lp_reduction=lp)
        whole = nextquill_terms(model64, encode(examples, tok), cfg)
        halves = [encode(examples[:2], tok), encode(examples[2:], tok)]
        dces = [batch_dce(model64, h) for h in halves]
        w_sum = sum(raw_weights(d, cfg.delta, cfg.lam, cfg.eps).sum() for d in dces)
        n = sum(d.numel() for d in dces)
        parts = [
            nextquill_terms(model64, h, cfg, dce=d, weight_total=w_sum, token_total=n)
            for h, d in zip(halves, dces, strict=True)
        ]
        assert 0 < int((whole.dce > cfg.delta).sum()) < whole.dce.numel()
        torch.testing.assert_close(parts[0].loss + parts[1].loss, whole.loss, rtol=1e-12, atol=0)
        torch.testing.assert_close(
            torch.cat([p.weights for p in parts]), whole.weights, rtol=1e-12, atol=0
        )
