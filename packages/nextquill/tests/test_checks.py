"""Bad input to the loss raises a ValueError/TypeError naming the argument and the expectation."""

from __future__ import annotations

import pytest
import torch
from nextquill import NextQuillConfig, encode, nextquill_from_logits, nextquill_terms


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": -0.1}, r"alpha: expected a number in \[0.0, inf\]"),
        ({"delta": 2.0}, r"delta: expected a number in \[-1.0, 1.0\]"),
        ({"lam": float("nan")}, "lam: expected a finite number"),
        ({"eps": True}, "eps: expected a finite number"),
        ({"lam": 0.0, "eps": 0.0}, "lam, eps: expected at least one > 0"),
        ({"lp_reduction": "sum"}, r"lp_reduction: expected one of \('weighted', 'mean'\)"),
    ],
)
def test_bad_config_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NextQuillConfig(**kwargs)


def test_bad_batches_raise(model64, tok, examples):
    batch = encode(examples, tok)
    missing = {k: v for k, v in batch.items() if k != "input_ids_without_history"}
    with pytest.raises(ValueError, match=r"batch: missing \['input_ids_without_history'\]"):
        nextquill_terms(model64, missing)
    with pytest.raises(TypeError, match="batch: expected a mapping"):
        nextquill_terms(model64, list(batch.values()))
    floats = dict(batch, labels=batch["labels"].double())
    with pytest.raises(TypeError, match=r"batch\['labels'\]: expected an int64 tensor"):
        nextquill_terms(model64, floats)
    short = dict(batch, attention_mask=batch["attention_mask"][:, 1:])
    with pytest.raises(ValueError, match=r"batch\['attention_mask'\]: expected the shape"):
        nextquill_terms(model64, short)
    rows = dict(batch, **{k: batch[k][:-1] for k in batch if k.endswith("without_history")})
    with pytest.raises(ValueError, match="expected 6 rows like input_ids, got 5"):
        nextquill_terms(model64, rows)


def test_mismatched_target_lengths_raise(model64, tok, examples):
    batch = encode(examples, tok)
    labels = batch["labels_without_history"].clone()
    first = int((labels[0] != -100).nonzero()[0, 0])
    labels[0, first] = -100  # one response token fewer in the counterfactual pass
    with pytest.raises(ValueError, match="labels_without_history: row 0 has .* target tokens"):
        nextquill_terms(model64, dict(batch, labels_without_history=labels))
    other = batch["labels_without_history"].clone()
    other[other != -100] = 5
    with pytest.raises(ValueError, match="the target tokens differ"):
        nextquill_terms(model64, dict(batch, labels_without_history=other))
    empty = {k: v.clone() for k, v in batch.items()}
    empty["labels"][1] = -100
    empty["labels_without_history"][1] = -100
    with pytest.raises(ValueError, match="labels: row 1 has no target token"):
        nextquill_terms(model64, empty)


def test_bad_logits_raise():
    lw, y = torch.randn(4, 7), torch.zeros(4, dtype=torch.int64)
    with pytest.raises(ValueError, match=r"logits_without: expected the shape of logits_with"):
        nextquill_from_logits(lw, torch.randn(4, 8), y)
    with pytest.raises(TypeError, match="logits_with: expected a floating"):
        nextquill_from_logits(lw.long(), lw, y)
    with pytest.raises(ValueError, match=r"targets: expected shape \(4,\)"):
        nextquill_from_logits(lw, lw, y[:3])
    with pytest.raises(ValueError, match=r"dce: expected shape \(4,\)"):
        nextquill_from_logits(lw, lw, y, dce=torch.zeros(5))
