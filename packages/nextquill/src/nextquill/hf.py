"""`NextQuillTrainer`: a `transformers.Trainer` whose training loss is NextQuill's.

Our own experiments train through `shared_core.train.fit`; this class is the drop-in for
people who fine-tune a Hugging Face causal LM (peft/LoRA or full) with `Trainer`, as the
paper's code does (``CustomTrainer3``). TRL's ``SFTTrainer`` subclasses `Trainer`, so the same
`compute_loss` override can be mixed into it. It needs the ``hf`` extra (accelerate).

The dataset yields `Example`-like rows (``prefix``, ``history``, ``suffix``, ``target``);
`NextQuillCollator` turns a list of them into the six tensors of a NextQuill batch. Keep
``remove_unused_columns=False`` in the `TrainingArguments` (the Trainer otherwise drops the
columns the model's forward does not name).

Gradient accumulation and data parallelism: transformers 5 hands `compute_loss` the
``num_items_in_batch`` of each accumulation window (the response-token count over all its
micro-batches and ranks), and a loss normalised by it is summed, not averaged, over the
window. NextQuill's L_n is normalised by the sum of the window's token weights w_t, which only
a forward pass gives, so `NextQuillTrainer.get_batch_samples` runs the data-side passes of the
window's micro-batches first (no gradient; theta_D, or the model being trained, whose weights
do not change within a window), stores each micro-batch's DCE in it, and replaces
``num_items_in_batch`` by a `WindowTotals` (the window's weight sum and token count, summed
over ranks). Each micro-batch's loss is then its share of the window's loss, times the number
of processes (DDP averages gradients over ranks), and ``loss_is_scaled_for_ga`` is True: the
loss and gradients of a window do not depend on how it is split into micro-batches or ranks.
The public code (``CustomTrainer3``) normalises the weights within each micro-batch and lets
the Trainer average over the window, which weights micro-batches equally whatever their token
counts (and, on transformers 5, where the model accepts ``num_items_in_batch``, rescales L_n
by it as well).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from shared_core.data import require_extra

require_extra("nextquill", "hf", "accelerate", "NextQuillTrainer")

import torch  # noqa: E402
import transformers  # noqa: E402

from nextquill.data import Example, encode  # noqa: E402
from nextquill.loss import (  # noqa: E402
    NextQuillConfig,
    PreferenceShare,
    batch_dce,
    nextquill_terms,
    raw_weights,
)

DCE_KEY = "nextquill_dce"
"""The key under which `NextQuillTrainer.get_batch_samples` stores a micro-batch's ``(N,)`` DCE."""


class WindowTotals(NamedTuple):
    """The normalisers of one accumulation window (all micro-batches, all ranks)."""

    weight_sum: torch.Tensor  # sum of the unnormalised w_t (scalar)
    tokens: torch.Tensor  # number of response tokens N (scalar)
    processes: int  # ranks the gradients are averaged over


class NextQuillCollator:
    """``collator(rows) -> batch``: `nextquill.data.encode` as a Trainer data collator."""

    def __init__(
        self, tokenizer: Any, padding_side: str = "left", max_length: int | None = None
    ) -> None:
        self.tokenizer = tokenizer
        self.padding_side = padding_side
        self.max_length = max_length

    def __call__(self, rows: Sequence[Example | Mapping[str, Any]]) -> dict[str, Any]:
        return encode(
            rows, self.tokenizer, padding_side=self.padding_side, max_length=self.max_length
        )


class NextQuillTrainer(transformers.Trainer):
    """`transformers.Trainer` with ``loss = L_n + alpha L_p`` (see `nextquill.loss`).

    Args:
        config: `NextQuillConfig` (the paper's alpha = 0.1, delta = 0.05, lambda = 0.9,
            eps = 0.1, weighted L_p; ``lp_reduction="mean"`` is the code's L_p).
        reference_model: theta_D for the data-side effect (paper), moved to the model's
            device and frozen; None takes it from the model being trained (the code).
        *args, **kwargs: passed to `transformers.Trainer` (give ``data_collator=
            NextQuillCollator(tokenizer)`` unless the dataset is already encoded).

    In evaluation (``model.training`` False) the loss is the plain CE of the full prompt,
    as in the code. In training the loss is normalised over the accumulation window (see the
    module docstring); `compute_loss` called without a `WindowTotals` gives this batch's loss.
    """

    loss_is_scaled_for_ga = True  # compute_loss normalises by the window's totals itself

    def __init__(
        self,
        *args: Any,
        config: NextQuillConfig | None = None,
        reference_model: Any = None,
        **kwargs: Any,
    ) -> None:
        if config is not None and not isinstance(config, NextQuillConfig):
            raise TypeError(f"config: expected a NextQuillConfig, got {type(config).__name__}")
        super().__init__(*args, **kwargs)
        self.nextquill = config or NextQuillConfig()
        # the run's share of tokens with DCE > delta: logged as ``over_delta``, and one
        # AllWeightsEpsWarning the first time a batch has none
        self.preference_share = PreferenceShare(self.nextquill.delta)
        self.reference_model = reference_model
        if reference_model is not None:
            reference_model.requires_grad_(False)
            reference_model.eval()

    def compute_loss(
        self,
        model: Any,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: Any = None,
    ) -> Any:
        if not model.training:
            out = model(
                input_ids=inputs["input_ids"],
                attention_mask=inputs["attention_mask"],
                labels=inputs["labels"],
            )
            return (out.loss, out) if return_outputs else out.loss
        if isinstance(num_items_in_batch, WindowTotals):
            terms = nextquill_terms(
                model,
                inputs,
                self.nextquill,
                dce=inputs[DCE_KEY],
                weight_total=num_items_in_batch.weight_sum,
                token_total=num_items_in_batch.tokens,
            )
            loss = terms.loss * num_items_in_batch.processes
        else:
            terms = nextquill_terms(model, inputs, self.nextquill, self._weighting_model(inputs))
            self.preference_share.update(terms.dce)
            loss = terms.loss
        return (loss, terms) if return_outputs else loss

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        """The Trainer's log, with the run's share of tokens over delta beside the loss."""
        if "loss" in logs and self.preference_share.tokens:
            logs = {**logs, "over_delta": self.preference_share.share}
        super().log(logs, *args, **kwargs)

    def _weighting_model(self, inputs: Mapping[str, Any]) -> Any:
        """theta_D on the batch's device, or None (self weights)."""
        ref = self.reference_model
        if ref is not None:
            ref.to(inputs["input_ids"].device)
        return ref

    # The Trainer passes the second value on to `compute_loss` untouched (as
    # ``num_items_in_batch``), so a `WindowTotals` in place of its token count is safe.
    def get_batch_samples(  # type: ignore[override]
        self, epoch_iterator: Any, num_batches: int, device: Any
    ) -> tuple[list[Any], WindowTotals | None]:
        """The window's micro-batches, each with its DCE (``DCE_KEY``), and the window's totals.

        The DCE comes from theta_D or, without one, from the model being trained (no gradient;
        its parameters are those of every micro-step of the window).
        """
        batch_samples, _ = super().get_batch_samples(epoch_iterator, num_batches, device)
        if not batch_samples:
            return batch_samples, None
        cfg = self.nextquill
        weight_sum = torch.zeros((), device=device)
        tokens = torch.zeros((), device=device)
        for sample in batch_samples:
            inputs = self._prepare_inputs(sample)
            ref = self._weighting_model(inputs)
            dce = batch_dce(self.model if ref is None else ref, inputs)
            sample[DCE_KEY] = dce
            self.preference_share.update(dce)
            weight_sum += raw_weights(dce, cfg.delta, cfg.lam, cfg.eps).sum().to(weight_sum)
            tokens += dce.numel()
        processes = self.accelerator.num_processes
        if processes > 1:
            both = self.accelerator.gather(torch.stack([weight_sum, tokens]).unsqueeze(0))
            weight_sum, tokens = both.reshape(-1, 2).sum(0)
        return batch_samples, WindowTotals(weight_sum, tokens, processes)
