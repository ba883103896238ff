"""Encoding (the counterfactual prompt drops exactly the history block) and the file readers."""

from __future__ import annotations

import json

import pytest
import torch
from nextquill import Example, character_examples, collate, encode, encode_one, read_reviews
from nextquill.data import review_examples, speeches


def _unpad(ids, mask):
    return [int(i) for i, m in zip(ids, mask, strict=True) if m]


@pytest.mark.parametrize("side", ["left", "right"])
def test_counterfactual_prompt_is_the_prompt_minus_exactly_the_history(tok, examples, side):
    batch = encode(examples, tok, padding_side=side)
    for i, e in enumerate(examples):
        full = _unpad(batch["input_ids"][i], batch["attention_mask"][i])
        cf = _unpad(
            batch["input_ids_without_history"][i], batch["attention_mask_without_history"][i]
        )
        hist = tok(e.history, add_special_tokens=False)["input_ids"] if e.history else []
        n_prefix = len(tok(e.prefix, add_special_tokens=False)["input_ids"])
        assert full == cf[:n_prefix] + hist + cf[n_prefix:]
        target = tok(e.target, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        for key in ("labels", "labels_without_history"):
            labels = batch[key][i]
            assert labels[labels != -100].tolist() == target
    pad = batch["attention_mask"] == 0
    assert bool((batch["labels"][pad] == -100).all())
    edge = 0 if side == "left" else -1
    assert bool((batch["attention_mask"][:, -1 - edge] == 1).all())


def test_max_length_drops_the_oldest_history_tokens(tok, examples):
    e = examples[0]
    full = encode_one(e, tok)
    short = encode_one(e, tok, max_length=len(full.with_history) - 5)
    assert len(short.with_history) == len(full.with_history) - 5
    assert short.without_history == full.without_history
    n_prefix = len(tok(e.prefix, add_special_tokens=False)["input_ids"])
    assert short.with_history[n_prefix:] == full.with_history[n_prefix + 5 :]
    with pytest.raises(ValueError, match="max_length: 3 is shorter"):
        encode_one(e, tok, max_length=3)


def test_collate_equals_encode(tok, examples):
    a = encode(examples, tok, padding_side="right")
    b = collate([encode_one(e, tok) for e in examples], tok.pad_token_id, "right")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_bad_examples_raise_clearly(tok, examples):
    with pytest.raises(ValueError, match=r"row: missing field\(s\) \['history'\]"):
        encode([{"prefix": "item :", "suffix": "review :", "target": "superb"}], tok)
    with pytest.raises(ValueError, match="target: expected a non-empty response"):
        Example("item :", "", "review :", "  ")
    with pytest.raises(TypeError, match="history: expected a str"):
        Example("item :", None, "review :", "superb")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="padding_side: expected 'left' or 'right'"):
        encode(examples, tok, padding_side="middle")
    with pytest.raises(ValueError, match="examples: expected at least one"):
        encode([], tok)
    with pytest.raises(ValueError, match="max_length: expected None or an int >= 2"):
        encode(examples, tok, max_length=0)


REVIEWS = [
    {
        "profile": [
            {"asin": "a1", "title": "Fine", "text": "Loved it.", "rating": 5, "timestamp": 1},
            {"asin": "a2", "title": "Meh", "text": "Slow start.", "rating": 3, "timestamp": 2},
        ],
        "data": {"asin": "a3", "title": "Great", "text": "A superb read.", "rating": 5},
    }
]
META = {"a1": ("Book One", "first"), "a2": ("Book Two", "second"), "a3": ("Book Three", "third")}


@pytest.mark.parametrize("layout", ["json", "jsonl"])
def test_review_file_to_the_codes_prompt(tmp_path, layout):
    path = tmp_path / f"reviews.{layout}"
    text = json.dumps(REVIEWS) if layout == "json" else "\n".join(json.dumps(r) for r in REVIEWS)
    path.write_text(text)
    rows = read_reviews(path)
    (e,) = review_examples(rows, META, max_history=8)
    assert e.target == "A superb read."
    assert e.prefix.endswith("[Item Title]: Book Three\n[Item Description]: third\n")
    assert e.history.startswith("[User's Past Reviews]:\n[Review 1]:\n- [Item Title]: Book Two")
    assert "[Review 2]:\n- [Item Title]: Book One" in e.history  # newest first, as in the code
    assert e.suffix.startswith("[Output Review Rating]: 5\n[Output Review Title]: Great\n")
    assert e.suffix.endswith("<|im_start|>assistant\n")
    (one,) = review_examples(rows, META, max_history=1, chat=False)
    assert "Book One" not in one.history and one.prefix.startswith("[Item Title]")


def test_review_file_with_a_missing_field_raises(tmp_path):
    bad = [{"profile": [{"title": "x", "rating": 1}], "data": REVIEWS[0]["data"]}]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=r"profile\[0\]: missing field\(s\) \['text'\]"):
        read_reviews(path)
    path.write_text(json.dumps([{"data": REVIEWS[0]["data"]}]))
    with pytest.raises(ValueError, match=r"missing field\(s\) \['profile'\]"):
        read_reviews(path)


def test_malformed_json_names_the_file_and_the_line(tmp_path):
    """Issue 46: a JSONDecodeError that named neither the file nor what was expected."""
    from shared_core.testing import assert_bad_input

    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(REVIEWS[0]) + "\n" + '{"profile": [}\n')
    message = assert_bad_input(lambda: read_reviews(path), ValueError, "path", str(path))
    assert "line 2" in message
    path.write_text("[1, 2]")
    assert_bad_input(lambda: read_reviews(path), ValueError, "row 0")


PLAY = """Hamlet:
To be, or not to be.

Horatio:
My lord.

Hamlet:
Words, words, words.

Horatio:
Good night.

Hamlet:
The rest is silence.
"""


def test_characters_are_users_with_their_earlier_speeches():
    assert speeches(PLAY)[0] == ("Hamlet", "To be, or not to be.")
    pairs = character_examples(PLAY, min_speeches=3, max_history=1)
    assert [who for who, _ in pairs] == ["Hamlet", "Hamlet"]
    _, last = pairs[-1]
    assert last.prefix == "Horatio: Good night.\n"
    assert last.history == "Earlier, Hamlet said:\n- Words, words, words.\n"
    assert last.suffix == "Hamlet:" and last.target == " The rest is silence."
