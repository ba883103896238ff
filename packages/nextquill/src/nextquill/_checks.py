"""Boundary checks of the public API: each names the argument, what it got and what it needs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

BATCH_KEYS = (
    "input_ids",
    "attention_mask",
    "labels",
    "input_ids_without_history",
    "attention_mask_without_history",
    "labels_without_history",
)
"""The six tensors of a NextQuill batch (`nextquill.data.encode` writes them)."""


def check_number(name: str, value: Any, low: float, high: float = math.inf) -> None:
    """A finite real number in ``[low, high]`` (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite number in [{low}, {high}], got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name}: expected a number in [{low}, {high}], got {value!r}")


def check_batch(batch: Any) -> None:
    """The six (batch, length) int tensors, each pair of the same shape, labels -100 or ids."""
    if not isinstance(batch, Mapping):
        raise TypeError(f"batch: expected a mapping of tensors, got {type(batch).__name__}")
    missing = [k for k in BATCH_KEYS if k not in batch]
    if missing:
        raise ValueError(
            f"batch: missing {missing}; expected the keys {list(BATCH_KEYS)} "
            "(nextquill.data.encode writes them: the prompt with and without the history block)"
        )
    for key in BATCH_KEYS:
        t = batch[key]
        if not isinstance(t, torch.Tensor) or t.dtype not in (torch.int64, torch.int32):
            raise TypeError(
                f"batch[{key!r}]: expected an int64 tensor (batch, length), got "
                f"{getattr(t, 'dtype', type(t).__name__)}"
            )
        if t.ndim != 2:
            raise ValueError(
                f"batch[{key!r}]: expected shape (batch, length), got {tuple(t.shape)}"
            )
    for suffix in ("", "_without_history"):
        ids = batch[f"input_ids{suffix}"]
        for key in (f"attention_mask{suffix}", f"labels{suffix}"):
            if batch[key].shape != ids.shape:
                raise ValueError(
                    f"batch[{key!r}]: expected the shape of input_ids{suffix} "
                    f"{tuple(ids.shape)}, got {tuple(batch[key].shape)}"
                )
    n0, n1 = batch["input_ids"].shape[0], batch["input_ids_without_history"].shape[0]
    if n0 != n1:
        raise ValueError(
            f"batch['input_ids_without_history']: expected {n0} rows like input_ids, got {n1}"
        )


def check_aligned_targets(
    labels_with: torch.Tensor, labels_without: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Target masks of the two passes (shifted labels != -100), checked to hold the same tokens.

    Returns the boolean masks ``(batch, length - 1)`` of both passes. Each row must have the
    same number of targets in both passes, with the same token ids in the same order (the
    counterfactual prompt removes the history block and nothing of the response).
    """
    m_with = labels_with[:, 1:] != -100
    m_without = labels_without[:, 1:] != -100
    n_with, n_without = m_with.sum(1), m_without.sum(1)
    if not torch.equal(n_with, n_without):
        row = int((n_with != n_without).nonzero()[0, 0])
        raise ValueError(
            f"labels_without_history: row {row} has {int(n_without[row])} target tokens but "
            f"labels has {int(n_with[row])}; both passes must score the same response"
        )
    if bool((n_with == 0).any()):
        row = int((n_with == 0).nonzero()[0, 0])
        raise ValueError(
            f"labels: row {row} has no target token (all -100 after the shift); "
            "expected a non-empty response"
        )
    t_with, t_without = labels_with[:, 1:][m_with], labels_without[:, 1:][m_without]
    if not torch.equal(t_with, t_without):
        raise ValueError(
            "labels_without_history: the target tokens differ from those of labels; both "
            "passes must score the same response tokens"
        )
    return m_with, m_without
