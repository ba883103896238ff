"""Bad input to the public API, in one table: each case raises a ValueError/TypeError naming
the argument (issue 46's probe: malformed JSON raised a JSONDecodeError naming neither the file
nor what was expected)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from nextquill import (
    Example,
    NextQuillConfig,
    collate,
    nextquill_from_logits,
    preference_weights,
    read_reviews,
    review_examples,
    word_tokenizer,
)

from shared_core.testing import assert_bad_input

torch.manual_seed(0)
_L = torch.randn(3, 5)
_T = torch.tensor([0, 1, 2])
_NAN_L = _L.clone()
_NAN_L[1, 2] = float("nan")


def _file(tmp: str, text: str) -> Path:
    path = Path(tmp) / "reviews.jsonl"
    path.write_text(text)
    return path


CASES = {
    # files
    "malformed JSON": (
        lambda tmp: read_reviews(_file(tmp, '{"profile": [}\n')),
        ValueError,
        "path",
        "reviews.jsonl",
    ),
    "a JSON list of numbers": (lambda tmp: read_reviews(_file(tmp, "[1, 2]")), ValueError, "row 0"),
    # examples
    "an example field that is no string": (
        lambda tmp: Example("a", "b", "c", 3),
        TypeError,
        "target",
    ),
    "an empty target": (lambda tmp: Example("a", "b", "c", ""), ValueError, "target"),
    "review rows of numbers": (lambda tmp: review_examples([1]), TypeError, "rows[0]"),
    "negative history": (
        lambda tmp: review_examples([], max_history=-1),
        ValueError,
        "max_history",
    ),
    "collate nothing": (lambda tmp: collate([], 0), ValueError, "encoded"),
    "unknown padding side": (lambda tmp: collate([], 0, "middle"), ValueError, "padding_side"),
    "a tokenizer word with a space": (lambda tmp: word_tokenizer(["a b"]), ValueError, "words"),
    # the objective
    "NaN logits": (lambda tmp: nextquill_from_logits(_NAN_L, _L, _T), ValueError, "logits_with"),
    "inf logits_without": (
        lambda tmp: nextquill_from_logits(_L, _L * float("inf"), _T),
        ValueError,
        "logits_without",
    ),
    "integer logits": (
        lambda tmp: nextquill_from_logits(_L.long(), _L, _T),
        TypeError,
        "logits_with",
    ),
    "logits of two shapes": (
        lambda tmp: nextquill_from_logits(_L, _L[:2], _T),
        ValueError,
        "logits_without",
    ),
    "targets of another length": (
        lambda tmp: nextquill_from_logits(_L, _L, _T[:2]),
        ValueError,
        "targets",
    ),
    "target outside the vocabulary": (
        lambda tmp: nextquill_from_logits(_L, _L, torch.tensor([0, 1, 9])),
        ValueError,
        "targets",
    ),
    "no response token": (
        lambda tmp: nextquill_from_logits(_L[:0], _L[:0], _T[:0]),
        ValueError,
        "targets",
    ),
    "NaN dce": (
        lambda tmp: nextquill_from_logits(_L, _L, _T, dce=torch.full((3,), float("nan"))),
        ValueError,
        "dce",
    ),
    "weights with a zero total": (
        lambda tmp: preference_weights(torch.zeros(3), 0.05, 0.9, 0.1, total=0.0),
        ValueError,
        "total",
    ),
    "negative lam": (lambda tmp: NextQuillConfig(lam=-1.0), ValueError, "lam"),
    "unknown reduction": (
        lambda tmp: NextQuillConfig(lp_reduction="zzz"),
        ValueError,
        "lp_reduction",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str, tmp_path: Path) -> None:
    call, *rest = CASES[case]
    assert_bad_input(lambda: call(str(tmp_path)), *rest)
