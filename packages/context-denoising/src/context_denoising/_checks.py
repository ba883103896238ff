"""Boundary checks of the public API: each error names the argument, what was expected and
what was received."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

IGNORE_INDEX = -100  # the label of a position that is not an answer token (HF convention)
VARIANTS = ("opposite", "both", "other")
SIGNS = ("loomtrain", "openrlhf")
REGIONS = ("row", "context")
NORMS = ("l1", "l2")


def check_number(
    name: str, value: Any, *, positive: bool = False, allow_none: bool = False
) -> None:
    """A finite real number, >= 0 (or > 0 with `positive`)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite number, got {value!r}")
    if positive and not value > 0:
        raise ValueError(f"{name}: expected a number > 0, got {value!r}")
    if not value >= 0:
        raise ValueError(f"{name}: expected a number >= 0, got {value!r}")


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name}: expected one of {choices}, got {value!r}")


def _tensor(batch: Mapping[str, Any], key: str, required: bool) -> torch.Tensor | None:
    value = batch.get(key)
    if value is None:
        if required:
            raise ValueError(f"batch: missing {key!r} (expected a (batch, time) tensor)")
        return None
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"batch[{key!r}]: expected a torch.Tensor, got {type(value).__name__}")
    return value


def check_batch(
    batch: Any, vocab_size: int, *, require_context: bool = True
) -> dict[str, torch.Tensor]:
    """Validate a causal-LM batch and fill in the defaults.

    `batch` maps ``input_ids`` (batch, time) int64, ``labels`` (batch, time) int64 with
    ``-100`` outside the answer (unshifted, as Hugging Face models take them), optionally
    ``attention_mask`` (batch, time) of 0/1 and ``context_mask`` (batch, time) bool: the
    tokens that are scored and may be perturbed (default: attended, non-answer tokens).
    Returns a dict with all four (``attention_mask`` as long, ``context_mask`` as bool).
    With `require_context` (the default) every row needs at least one context token.
    """
    if not isinstance(batch, Mapping):
        raise TypeError(
            f"batch: expected a mapping with 'input_ids' and 'labels', got {type(batch).__name__}"
        )
    ids = _tensor(batch, "input_ids", True)
    labels = _tensor(batch, "labels", True)
    assert ids is not None and labels is not None
    if ids.ndim != 2 or ids.shape[0] == 0 or ids.shape[1] < 2:
        raise ValueError(
            f"batch['input_ids']: expected shape (batch >= 1, time >= 2), got {tuple(ids.shape)}"
        )
    if ids.dtype != torch.long:
        raise TypeError(f"batch['input_ids']: expected dtype int64, got {ids.dtype}")
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= vocab_size:
        raise ValueError(
            f"batch['input_ids']: token ids must lie in [0, {vocab_size}) (the model's vocabulary), "
            f"got values in [{lo}, {hi}]"
        )
    shape = tuple(ids.shape)
    if tuple(labels.shape) != shape:
        raise ValueError(
            f"batch['labels']: expected the shape of input_ids {shape}, got {tuple(labels.shape)}"
        )
    if labels.dtype != torch.long:
        raise TypeError(f"batch['labels']: expected dtype int64, got {labels.dtype}")
    bad = (labels != IGNORE_INDEX) & ((labels < 0) | (labels >= vocab_size))
    if bool(bad.any()):
        raise ValueError(
            f"batch['labels']: expected -100 or ids in [0, {vocab_size}), got {labels[bad][:4].tolist()}"
        )
    answer = labels[:, 1:] != IGNORE_INDEX  # position 0 is never predicted
    empty = (~answer.any(dim=1)).nonzero().flatten().tolist()
    if empty:
        raise ValueError(
            f"batch['labels']: rows {empty[:8]} have no answer token (every label after position 0 "
            "is -100); the noise score is the gradient of the answer's cross-entropy"
        )
    attn = _tensor(batch, "attention_mask", False)
    if attn is None:
        attn = torch.ones_like(ids)
    else:
        if tuple(attn.shape) != shape:
            raise ValueError(
                f"batch['attention_mask']: expected the shape of input_ids {shape}, got {tuple(attn.shape)}"
            )
        if attn.dtype.is_floating_point or not bool(((attn == 0) | (attn == 1)).all()):
            raise ValueError("batch['attention_mask']: expected an integer/bool tensor of 0 and 1")
        attn = attn.long()
        if bool(((labels != IGNORE_INDEX) & (attn == 0)).any()):
            raise ValueError("batch['labels']: an answer token lies where attention_mask is 0")
    ctx = _tensor(batch, "context_mask", False)
    if ctx is None:
        ctx = (attn == 1) & (labels == IGNORE_INDEX)
    else:
        if tuple(ctx.shape) != shape:
            raise ValueError(
                f"batch['context_mask']: expected the shape of input_ids {shape}, got {tuple(ctx.shape)}"
            )
        if ctx.dtype != torch.bool:
            raise TypeError(f"batch['context_mask']: expected dtype bool, got {ctx.dtype}")
        if bool((ctx & (attn == 0)).any()):
            raise ValueError(
                "batch['context_mask']: a context token lies where attention_mask is 0"
            )
    none = (~ctx.any(dim=1)).nonzero().flatten().tolist()
    if none and require_context:
        raise ValueError(f"batch['context_mask']: rows {none[:8]} have no context token to score")
    return {"input_ids": ids, "labels": labels, "attention_mask": attn, "context_mask": ctx}
