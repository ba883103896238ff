"""`Dist2Trainer`: a `transformers.Trainer` whose loss is DIST2Loss (for users' fine-tuning).

Our own experiments train through `shared_core.train.fit`; this class is the drop-in for
people who already train a Hugging Face causal LM with `Trainer` (TRL's `SFTTrainer` is a
subclass of it, so the same `compute_loss` override works there). It needs the `hf` extra.
"""

from __future__ import annotations

from typing import Any

try:
    import transformers
except ModuleNotFoundError:  # pragma: no cover - exercised only without the extra
    raise ModuleNotFoundError(
        "Dist2Trainer needs the 'hf' extra: in the workspace `uv sync --package dist2loss "
        "--extra hf`; with pip `pip install 'dist2loss[hf]'`"
    ) from None

from dist2loss._checks import check_alpha, check_tau
from dist2loss.loss import causal_dist2_loss
from dist2loss.metric import MetricTable


class Dist2Trainer(transformers.Trainer):
    """`transformers.Trainer` with ``loss = CE + alpha * KL(p_d || q)`` on metric tokens.

    Args:
        metric: the `MetricTable` of V_d (e.g. `number_table_from_tokenizer(tokenizer)`);
            its vocab_size must equal the model's output size.
        tau, alpha, restrict, normalise: as in `dist2_loss` (paper defaults tau=1, alpha=0.1).
        *args, **kwargs: passed to `transformers.Trainer`.

    Batches carry ``labels`` unshifted (the Hugging Face convention, -100 where ignored);
    the loss is the mean over this batch's positions (``num_items_in_batch``, used by
    Trainer to average over gradient-accumulation steps, is not applied).
    """

    def __init__(
        self,
        *args: Any,
        metric: MetricTable,
        tau: float = 1.0,
        alpha: float = 0.1,
        restrict: bool = True,
        normalise: str = "tokens",
        **kwargs: Any,
    ) -> None:
        if not isinstance(metric, MetricTable):
            raise TypeError(f"metric: expected a MetricTable, got {type(metric).__name__}")
        check_tau(tau)
        check_alpha(alpha)
        super().__init__(*args, **kwargs)
        self.metric = metric
        self.dist2 = {"tau": tau, "alpha": alpha, "restrict": restrict, "normalise": normalise}

    def compute_loss(
        self,
        model: Any,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: Any = None,
    ) -> Any:
        if "labels" not in inputs:
            raise ValueError("inputs: expected a 'labels' entry (token ids, -100 where ignored)")
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = causal_dist2_loss(outputs.logits, labels, self.metric, **self.dist2)
        return (loss, outputs) if return_outputs else loss
