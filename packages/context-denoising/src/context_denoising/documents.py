"""Long-context retrieval documents as text: the needle task in TRL's prompt/completion form.

A document is a haystack of `context_words` words cut from a text (Shakespeare in the SmolLM2
run), with one needle sentence ("The secret number of Portia is 4821.") and `n_distractors`
look-alike sentences about other names planted at random word gaps; the question asks for the
needle's number, the completion is the number:

    {"prompt": "<haystack with 4 planted sentences>\\nQuestion: what is the secret number of
     Portia? Answer:", "completion": " 4821"}

These are the files ``context-denoising train / score / evaluate`` read (`write_documents`
writes them as JSONL); the ``--scale small`` reproduction builds the same task from tokens.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

NAMES = (
    "Portia",
    "Hamlet",
    "Viola",
    "Oberon",
    "Banquo",
    "Miranda",
    "Lear",
    "Puck",
    "Juliet",
    "Iago",
)


def needle_documents(
    words: Sequence[str],
    n: int,
    seed: int,
    *,
    context_words: int = 300,
    n_distractors: int = 3,
    names: Sequence[str] = NAMES,
) -> list[dict[str, str]]:
    """`n` prompt/completion records, a pure function of ``(words, n, seed, ...)``.

    Args:
        words: the haystack text, split into words (at least ``2 * context_words``).
        n: documents to make.
        context_words: haystack words per document (the planted sentences come on top).
        n_distractors: sentences of the needle's shape about other names.
        names: the names drawn from (``n_distractors + 1`` distinct ones per document).
    """
    for name, value in (("n", n), ("context_words", context_words)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: expected a positive int, got {value!r}")
    if isinstance(n_distractors, bool) or not isinstance(n_distractors, int) or n_distractors < 0:
        raise ValueError(f"n_distractors: expected an int >= 0, got {n_distractors!r}")
    if len(set(names)) < n_distractors + 1:
        raise ValueError(
            f"names: {n_distractors} distractors need {n_distractors + 1} distinct names, "
            f"got {len(set(names))}"
        )
    if len(words) < 2 * context_words:
        raise ValueError(
            f"words: expected at least {2 * context_words} words (2 x context_words), "
            f"got {len(words)}"
        )
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        start = int(rng.integers(0, len(words) - context_words + 1))
        hay = list(words[start : start + context_words])
        chosen = rng.choice(list(dict.fromkeys(names)), size=n_distractors + 1, replace=False)
        numbers = rng.integers(1000, 10000, size=len(chosen))
        facts = [f"The secret number of {a} is {b}." for a, b in zip(chosen, numbers, strict=True)]
        cuts = np.sort(rng.choice(len(hay) + 1, size=len(facts), replace=False)).tolist()
        pieces: list[str] = []
        prev = 0
        for cut, fact in zip(cuts, rng.permutation(len(facts)).tolist(), strict=True):
            pieces += [*hay[prev:cut], facts[fact]]
            prev = cut
        pieces += hay[prev:]
        question = f"\nQuestion: what is the secret number of {chosen[0]}? Answer:"
        out.append({"prompt": " ".join(pieces) + question, "completion": f" {numbers[0]}"})
    return out


def write_documents(path: str | os.PathLike[str], records: Sequence[dict[str, str]]) -> Path:
    """Write `records` as JSONL (one object a line), atomically."""
    from shared_core.data import write_jsonl

    return Path(write_jsonl(path, list(records)))
