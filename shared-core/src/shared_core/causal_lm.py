"""What a package's own transformers causal-LM class needs beside its blocks (issue 64).

mesa-layer's `MesaNetForCausalLM` and free-energy-mixer's `FEMForCausalLM` wrap their recurrent
models as transformers models; both need the same three pieces, which live here once:

- `next_token_loss(logits, labels, num_items_in_batch)`: the shifted cross-entropy in the
  logits' dtype, summed and divided by Trainer's `num_items_in_batch` when it is given, so the
  loss (and its gradients) do not depend on how gradient accumulation splits a batch;
- `check_attention_mask`: one clear error for padding, which a recurrent state cannot skip;
- `RecurrentCache`: the decoding state generate() carries, one per-layer state per block and
  the tokens read so far, with the attributes transformers' generation loop reads.

Needs torch (``shared-core[torch]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import torch
import torch.nn.functional as F

_L = TypeVar("_L")


@dataclass
class RecurrentCache(Generic[_L]):
    """Decoding state of a recurrent causal LM: one per-layer state (`layers`, of the model's
    own type) per block and how many tokens it has read (`seen_tokens`). A package subclasses
    it to name its layer state; its memory need not grow with the tokens."""

    layers: list[_L]
    seen_tokens: int

    is_compileable: ClassVar[bool] = False
    is_croppable: ClassVar[bool] = False

    @property
    def is_linear(self) -> list[bool]:
        """transformers' flag per layer: the state is never sliced by position."""
        return [True] * len(self.layers)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Tokens read so far (transformers' name)."""
        return self.seen_tokens


def check_attention_mask(attention_mask: torch.Tensor | None) -> None:
    """A recurrent state (or a cache without positions) cannot skip padding: only an all-ones
    mask (or none) is accepted."""
    if attention_mask is not None and not bool((attention_mask == 1).all()):
        raise ValueError(
            "attention_mask: expected all ones (this model's decoding cache has no padding support); "
            "generate equal-length prompts, or one prompt at a time"
        )


def next_token_loss(
    logits: torch.Tensor, labels: torch.Tensor, num_items_in_batch: Any = None
) -> torch.Tensor:
    """Cross-entropy of ``logits[:, t]`` ``(B, T, V)`` against ``labels[:, t + 1]`` ``(B, T)``
    (``-100`` ignored), in the logits' dtype (transformers' own loss casts to float32, which a
    float64 check cannot use). Averaged over the labelled tokens, or summed and divided by
    Trainer's `num_items_in_batch` (its count over gradient-accumulation steps) when given."""
    if labels.shape != logits.shape[:2]:
        raise ValueError(
            f"labels: expected shape {tuple(logits.shape[:2])} (that of input_ids), got "
            f"{tuple(labels.shape)}"
        )
    shifted = F.pad(labels[:, 1:], (0, 1), value=-100).to(logits.device)
    flat = logits.flatten(0, 1)
    if num_items_in_batch is None:
        return F.cross_entropy(flat, shifted.flatten(), ignore_index=-100)
    total = F.cross_entropy(flat, shifted.flatten(), ignore_index=-100, reduction="sum")
    mean: torch.Tensor = total / num_items_in_batch
    return mean


def causal_lm_output(
    logits: torch.Tensor,
    labels: torch.Tensor | None,
    cache: Any,
    *,
    return_dict: bool,
    num_items_in_batch: Any = None,
) -> Any:
    """A causal-LM forward's result from its `logits` ``(B, T, V)``: the `next_token_loss`
    when `labels` are given, and transformers' ``CausalLMOutputWithPast`` (or, without
    `return_dict`, the tuple ``([loss,] logits, cache)``)."""
    from transformers.modeling_outputs import CausalLMOutputWithPast

    loss = None if labels is None else next_token_loss(logits, labels, num_items_in_batch)
    if not return_dict:
        return (logits, cache) if loss is None else (loss, logits, cache)
    return CausalLMOutputWithPast(loss=loss, logits=logits, cache=cache)
