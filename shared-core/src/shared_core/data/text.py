"""Character-level corpora: a text as integer ids over its sorted alphabet, split train/val."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class CharCorpus:
    """Character ids of the training and validation text, and the alphabet (id = position)."""

    train: np.ndarray
    val: np.ndarray
    alphabet: str

    @property
    def vocab_size(self) -> int:
        return len(self.alphabet)


def char_corpus(text: str, val_fraction: float = 0.1) -> CharCorpus:
    """Encode `text` over its sorted alphabet; the last `val_fraction` of it validates.

    Args:
        text: at least 1000 characters (e.g. ``load("shakespeare")[:max_chars]``).
        val_fraction: share of the characters, from the end, held out for validation.
    """
    if not isinstance(text, str) or len(text) < 1000:
        got = f"{len(text)} characters" if isinstance(text, str) else type(text).__name__
        raise ValueError(f"text: expected a str of at least 1000 characters, got {got}")
    if (
        not isinstance(val_fraction, float | int)
        or isinstance(val_fraction, bool)
        or not 0 < val_fraction < 1
    ):
        raise ValueError(f"val_fraction: expected a number in (0, 1), got {val_fraction!r}")
    alphabet = "".join(sorted(set(text)))
    lut = {c: i for i, c in enumerate(alphabet)}
    ids = np.fromiter((lut[c] for c in text), dtype=np.int64, count=len(text))
    n_val = int(len(ids) * val_fraction)
    return CharCorpus(train=ids[:-n_val], val=ids[-n_val:], alphabet=alphabet)
