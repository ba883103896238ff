"""`CDTTrainer`: the CDT step inside a Hugging Face `transformers.Trainer`.

Only `compute_loss` changes: each micro-batch is scored (`embedding_gradients`, adapters off),
its noise embeddings are shifted by ``-lr_t * beta * g`` (`CDTConfig`, ``lr_t`` the
scheduler's current rate, as LOOM-Train's ``scheduler.get_last_lr()[0]``) and the CE of the
perturbed pass is returned. Gradient accumulation is exact: a row's noise mask depends on
that row alone (per-sequence scoring loss), and the training loss is the SUM of the answer
tokens' CE divided by ``num_items_in_batch``, the answer-token count of the whole
accumulated batch that transformers 5 passes, so k micro-batches of n rows give the loss and
gradients of one batch of k n rows. In evaluation (``model.training`` False) the loss is the
plain CE.

Batches are the package's: ``input_ids``, unshifted ``labels`` (-100 outside the answer),
optional ``attention_mask`` and ``context_mask`` (kept by the column filter).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import Trainer

from context_denoising._checks import check_batch
from context_denoising.cdt import CDTConfig, cdt_loss
from context_denoising.score import forward, lm_loss, vocab_size


class CDTTrainer(Trainer):
    """A `transformers.Trainer` whose training loss is CDT's (`cdt_loss`).

    Args:
        cdt_config: the step (default `CDTConfig()`, the paper's ``beta = 5``); every other
            argument is the Trainer's.
    """

    def __init__(self, *args: Any, cdt_config: CDTConfig | None = None, **kwargs: Any) -> None:
        cdt_config = cdt_config or CDTConfig()
        if not isinstance(cdt_config, CDTConfig):
            raise TypeError(f"cdt_config: expected a CDTConfig, got {type(cdt_config).__name__}")
        super().__init__(*args, **kwargs)
        self.cdt_config = cdt_config
        # have the Trainer count the accumulated batch's answer tokens (labels[..., 1:] != -100)
        # for every model, whatever its forward signature; `_loss_shifts_labels` is private
        # (transformers 5.x's `_get_num_items_in_batch`), pinned by test_trainer.py
        self.model_accepts_loss_kwargs = True
        self._loss_shifts_labels = True

    def _set_signature_columns_if_needed(self) -> None:
        super()._set_signature_columns_if_needed()
        if self._signature_columns is not None and "context_mask" not in self._signature_columns:
            self._signature_columns.append("context_mask")

    def current_lr(self) -> float:
        """``lr_t``: the rate the optimiser applies at this step."""
        if self.optimizer is None:
            raise RuntimeError("CDTTrainer.current_lr: no optimizer yet (call train())")
        return float(self.optimizer.param_groups[0]["lr"])

    def compute_loss(
        self,
        model: Any,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> Any:
        """CE of the perturbed pass: sum over answer tokens / `num_items_in_batch` (or mean)."""
        batch = {k: v for k, v in inputs.items() if k != "num_items_in_batch"}
        reduction = "mean" if num_items_in_batch is None else "sum"
        outputs: Any = None
        if model.training:
            loss, _ = cdt_loss(
                model, batch, self.cdt_config, self.current_lr(), reduction=reduction
            )
        else:  # evaluation: the plain CE, and the logits for metrics
            checked = check_batch(batch, vocab_size(model), require_context=False)
            outputs = forward(model, checked, input_ids=checked["input_ids"])
            loss = lm_loss(outputs.logits, checked["labels"], reduction=reduction)
        scaled = num_items_in_batch is not None
        if num_items_in_batch is not None:
            loss = loss / num_items_in_batch
            if self.args.average_tokens_across_devices and self.args.world_size > 1:
                # the count is over all processes, and DDP averages their gradients
                loss = loss * self.accelerator.num_processes
        # read by training_step right after this call: divided by the accumulated batch's
        # count already (no further 1/k), or a mean that still needs it
        self.loss_is_scaled_for_ga = scaled
        return (loss, outputs) if return_outputs else loss
