"""`Dist2Trainer`: a `transformers.Trainer` whose loss is DIST2Loss (for users' fine-tuning).

Our own experiments train through `shared_core.train.fit`; this class is the drop-in for
people who already train a Hugging Face causal LM with `Trainer` (TRL's `SFTTrainer` is a
subclass of it, so the same overrides work there). It needs the `hf` extra.

Gradient accumulation and data parallelism follow transformers 5's contract (read from
`transformers.Trainer.training_step` / `compute_loss` / `_get_num_items_in_batch`, 5.24):
the Trainer fetches the k micro-batches of one optimizer step together (`get_batch_samples`)
and passes a count of their items to every `compute_loss` call as ``num_items_in_batch``.
A loss that divides its SUM by that count is "scaled for gradient accumulation": the k
micro-batch losses then add up to the loss of the whole batch, and `training_step` must not
divide again by k, which it decides from ``loss_is_scaled_for_ga`` (or, when that is None or
absent, from ``model_accepts_loss_kwargs and num_items_in_batch is not None``).
"""

from __future__ import annotations

from typing import Any

import torch

try:
    import transformers
except ModuleNotFoundError:  # pragma: no cover - exercised only without the extra
    from shared_core.data import require_extra

    # the one-line message; error= keeps importing dist2loss.hf an ImportError
    require_extra(
        "dist2loss", "hf", "transformers", "Dist2Trainer", in_root=False, error=ModuleNotFoundError
    )
    raise

from dist2loss._checks import check_alpha, check_tau
from dist2loss.loss import NORMALISATIONS, causal_dist2_loss, check_negatives, check_target
from dist2loss.metric import MetricTable


class Dist2Trainer(transformers.Trainer):
    """`transformers.Trainer` with ``loss = CE + alpha * KL(p_d || p_theta)`` on metric tokens.

    Args:
        metric: the `MetricTable` of V_d (e.g. `number_table_from_tokenizer(tokenizer)`);
            its vocab_size must equal the model's output size.
        tau, alpha, restrict, target, negatives, beta, normalise: as in `dist2_loss` (paper
            defaults tau=1, alpha=0.1, full-vocabulary KL, no neighbor negatives).
        *args, **kwargs: passed to `transformers.Trainer`.

    Batches carry ``labels`` unshifted (the Hugging Face convention, -100 where ignored).
    In training the loss is the sum over this micro-batch's predicted positions (labels[..., 1:])
    divided by the count over all micro-batches of the optimizer step (and over all processes
    when ``args.average_tokens_across_devices``, the default; the loss is then multiplied by
    the number of processes because DDP averages their gradients). So loss and gradients do
    not depend on how a batch is split into accumulation steps or devices (tested for k = 1,
    2, 4). In evaluation it is the mean over the batch. Tensor, context and sequence
    parallelism (processes sharing sequences) are not handled.
    """

    def __init__(
        self,
        *args: Any,
        metric: MetricTable,
        tau: float = 1.0,
        alpha: float = 0.1,
        restrict: bool = False,
        target: str = "distance",
        negatives: int = 0,
        beta: float = 0.1,
        normalise: str = "tokens",
        **kwargs: Any,
    ) -> None:
        if not isinstance(metric, MetricTable):
            raise TypeError(f"metric: expected a MetricTable, got {type(metric).__name__}")
        check_tau(tau)
        check_alpha(alpha)
        check_alpha(beta, "beta")
        check_target(target)
        check_negatives(negatives, metric)
        if normalise not in NORMALISATIONS:
            raise ValueError(f"normalise: expected one of {NORMALISATIONS}, got {normalise!r}")
        super().__init__(*args, **kwargs)
        self.metric = metric
        self.dist2 = {
            "tau": tau,
            "alpha": alpha,
            "restrict": restrict,
            "target": target,
            "negatives": negatives,
            "beta": beta,
            "normalise": normalise,
        }
        # compute_loss below consumes num_items_in_batch itself (it never reaches the model):
        # with this flag the Trainer (every 5.x) treats a loss normalised by it as GA-scaled
        self.model_accepts_loss_kwargs = True
        self._dist2_metric_in_batch: torch.Tensor | None = None

    def _count_items(self, batch_samples: list[Any], device: Any) -> torch.Tensor | None:
        """(2,) int64: predicted positions and metric positions over the micro-batches
        (labels[..., 1:], as the causal loss sees them), summed over processes when
        ``average_tokens_across_devices`` (what the Trainer does for its own count)."""
        if not batch_samples or any("labels" not in b for b in batch_samples):
            return None
        counts = torch.zeros(2, dtype=torch.int64)
        for batch in batch_samples:
            y = torch.as_tensor(batch["labels"])[..., 1:].cpu()
            kept = y != -100
            slot = self.metric.slot(y.device)[
                torch.where(kept, y, 0).clamp(0, self.metric.vocab_size - 1)
            ]
            counts += torch.stack([kept.sum(), (kept & (slot >= 0)).sum()])
        counts = counts.to(device)
        if self.args.average_tokens_across_devices and self.args.world_size > 1:
            counts = self.accelerator.gather(counts[None]).reshape(-1, 2).sum(0)
        return counts

    def get_batch_samples(self, epoch_iterator: Any, num_batches: int, device: Any) -> Any:
        """The Trainer's micro-batches of one optimizer step, with OUR count of their items
        (the causal loss's shifted labels, for any model class) as ``num_items_in_batch``."""
        batch_samples, _ = super().get_batch_samples(epoch_iterator, num_batches, device)
        counts = self._count_items(batch_samples, device)
        self._dist2_metric_in_batch = None if counts is None else counts[1]
        return batch_samples, None if counts is None else counts[0]

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
        scaled = bool(model.training) and num_items_in_batch is not None
        counts: dict[str, Any] = {}
        if scaled:
            counts["num_items_in_batch"] = num_items_in_batch
            if self.dist2["normalise"] == "metric":
                n_metric = self._dist2_metric_in_batch
                if n_metric is None:
                    raise ValueError(
                        "num_items_in_batch: normalise='metric' needs the metric-position count "
                        "of get_batch_samples; got a count from elsewhere"
                    )
                # a step without any metric label has no KL term: any positive count will do
                counts["num_metric_in_batch"] = n_metric.clamp(min=1)
        loss = causal_dist2_loss(outputs.logits, labels, self.metric, **self.dist2, **counts)
        if scaled and self.args.average_tokens_across_devices and self.args.world_size > 1:
            loss = loss * self.accelerator.num_processes  # DDP averages the processes' gradients
        # read by training_step right after this call: divide by the accumulation steps or not
        self.loss_is_scaled_for_ga = scaled
        return (loss, outputs) if return_outputs else loss
