"""Evaluation protocols: the authors' (max test score over epochs) and an honest one.

The authors' ``train_g.py`` trains on the outer training fold, evaluates the test fold after
every epoch and reports ``max(test_accuracies)`` per fold (``logger.print_stat``): the epoch
is chosen on the test fold. The honest protocol holds out a stratified validation split of
the training fold, chooses the epoch (or the SVM's C) with the best validation score and
reports the test score of that choice. Both are read off ONE training run per fold (trained
on the training fold minus the validation split), so their difference is the selection
alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def kfold(n: int, n_folds: int = 10, seed: int = 123) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(train_idx, test_idx)`` per fold, identical to scikit-learn's
    ``KFold(n_folds, shuffle=True, random_state=seed)`` (the authors' folds for seed 123)."""
    if isinstance(n_folds, bool) or not isinstance(n_folds, int) or n_folds < 2:
        raise ValueError(f"n_folds: expected an int >= 2, got {n_folds!r}")
    if n < n_folds:
        raise ValueError(f"n: expected at least n_folds = {n_folds} samples, got {n}")
    idx = np.arange(n)
    np.random.RandomState(seed).shuffle(idx)
    sizes = np.full(n_folds, n // n_folds)
    sizes[: n % n_folds] += 1
    out, start = [], 0
    for size in sizes:
        test = idx[start : start + size]
        train = np.concatenate([idx[:start], idx[start + size :]])
        out.append((np.sort(train), np.sort(test)))
        start += size
    return out


def inner_split(
    train_idx: np.ndarray, labels: np.ndarray | None, val_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Split a training fold into (fit, validation); stratified by `labels` when given."""
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction: expected a number in (0, 1), got {val_fraction!r}")
    rng = np.random.default_rng(seed)
    train_idx = np.asarray(train_idx)
    groups = (
        [train_idx]
        if labels is None
        else [train_idx[labels[train_idx] == c] for c in np.unique(labels[train_idx])]
    )
    val = []
    for grp in groups:
        k = max(1, round(val_fraction * len(grp))) if len(grp) > 1 else 0
        val.append(rng.permutation(grp)[:k])
    v = np.sort(np.concatenate(val))
    return np.setdiff1d(train_idx, v), v


@dataclass(frozen=True)
class Selection:
    """One fold's reported test score under each protocol."""

    honest: float  # test score at the epoch with the best validation score
    optimistic: float  # best test score over all epochs (the authors' script)
    epoch: int  # the honest protocol's epoch (0-based)


def select(val: Sequence[float], test: Sequence[float], higher_is_better: bool = True) -> Selection:
    """Both protocols from per-epoch validation and test scores (ties: the earliest epoch)."""
    v, t = np.asarray(val, dtype=np.float64), np.asarray(test, dtype=np.float64)
    if v.shape != t.shape or v.ndim != 1 or v.size == 0:
        raise ValueError(
            f"val, test: expected two equal-length 1-D score lists, got {v.shape}, {t.shape}"
        )
    if not (np.all(np.isfinite(v)) and np.all(np.isfinite(t))):
        raise ValueError(f"val, test: expected finite scores, got {v.tolist()} and {t.tolist()}")
    sign = 1.0 if higher_is_better else -1.0
    best = int(np.argmax(sign * v))
    opt = float(t.max() if higher_is_better else t.min())
    return Selection(honest=float(t[best]), optimistic=opt, epoch=best)
