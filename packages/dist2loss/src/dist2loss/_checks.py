"""Boundary checks of the public API: each names the argument, what it got and what it needs."""

from __future__ import annotations

import math
from typing import Any

import torch


def check_positive_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name}: expected a positive int, got {value!r}")


def check_tau(tau: Any) -> None:
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not math.isfinite(tau):
        raise ValueError(f"tau: expected a finite number > 0, got {tau!r}")
    if tau <= 0:
        raise ValueError(f"tau: expected > 0 (the target's temperature), got {tau!r}")


def check_alpha(alpha: Any, name: str = "alpha") -> None:
    """A finite term weight >= 0 (`alpha`, the KL's; `beta`, the neighbor negatives')."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha):
        raise ValueError(f"{name}: expected a finite number >= 0, got {alpha!r}")
    if alpha < 0:
        raise ValueError(f"{name}: expected >= 0 (a loss-term weight), got {alpha!r}")


def check_logits_labels(logits: Any, labels: Any, vocab_size: int, ignore_index: int) -> None:
    """(..., V) floating logits with V = the table's vocabulary, (...) int64 labels in range."""
    if not isinstance(logits, torch.Tensor) or not logits.dtype.is_floating_point:
        raise TypeError(
            f"logits: expected a floating-point tensor (..., vocab), got "
            f"{getattr(logits, 'dtype', type(logits).__name__)}"
        )
    if not isinstance(labels, torch.Tensor) or labels.dtype != torch.int64:
        raise TypeError(
            f"labels: expected an int64 tensor of token ids, got "
            f"{getattr(labels, 'dtype', type(labels).__name__)}"
        )
    if logits.ndim < 1 or logits.shape[:-1] != labels.shape:
        raise ValueError(
            f"labels: expected shape logits.shape[:-1] = {tuple(logits.shape[:-1])}, got "
            f"{tuple(labels.shape)} (logits {tuple(logits.shape)})"
        )
    if logits.shape[-1] != vocab_size:
        raise ValueError(
            f"metric: its table is for a vocabulary of {vocab_size} tokens but logits have "
            f"{logits.shape[-1]} (last dimension); build the table with vocab_size={logits.shape[-1]}"
        )
    if labels.numel() == 0:
        raise ValueError(f"labels: expected at least one position, got shape {tuple(labels.shape)}")
    kept = labels[labels != ignore_index]
    if kept.numel() and (int(kept.min()) < 0 or int(kept.max()) >= vocab_size):
        raise ValueError(
            f"labels: expected ids in [0, {vocab_size}) or ignore_index={ignore_index}, got "
            f"range [{int(kept.min())}, {int(kept.max())}]"
        )
