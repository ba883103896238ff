"""`NextQuillTrainer`: a `transformers.Trainer` whose training loss is NextQuill's.

Our own experiments train through `shared_core.train.fit`; this class is the drop-in for
people who fine-tune a Hugging Face causal LM (peft/LoRA or full) with `Trainer`, as the
paper's code does (``CustomTrainer3``). TRL's ``SFTTrainer`` subclasses `Trainer`, so the same
`compute_loss` override can be mixed into it. It needs the ``hf`` extra (accelerate).

The dataset yields `Example`-like rows (``prefix``, ``history``, ``suffix``, ``target``);
`NextQuillCollator` turns a list of them into the six tensors of a NextQuill batch. Keep
``remove_unused_columns=False`` in the `TrainingArguments` (the Trainer otherwise drops the
columns the model's forward does not name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shared_core.data import require_extra

require_extra("nextquill", "hf", "accelerate", "NextQuillTrainer")

import transformers  # noqa: E402

from nextquill.data import Example, encode  # noqa: E402
from nextquill.loss import NextQuillConfig, nextquill_terms  # noqa: E402


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
    as in the code. The loss is this batch's (``num_items_in_batch`` is not applied).
    """

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
        ref = self.reference_model
        if ref is not None:
            ref.to(inputs["input_ids"].device)
        terms = nextquill_terms(model, inputs, self.nextquill, ref)
        return (terms.loss, terms) if return_outputs else terms.loss
