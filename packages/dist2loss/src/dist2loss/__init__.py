"""DIST2Loss (Chung et al., ICLR 2026): distance-aware categorical targets for metric tokens.

``dist2_loss(logits, labels, metric, tau=1.0, alpha=0.1)`` adds to cross-entropy the KL from
p_d(v) ∝ exp(-d(v, g)/tau) over the metric tokens V_d to the model's full-vocabulary
distribution read at V_d (``restrict=True``: renormalised over V_d).
`Dist2Trainer` (``from dist2loss.hf import Dist2Trainer``, extra ``hf``) is the drop-in
`transformers.Trainer`.

The names below are imported on first use, so that ``dist2loss --help`` never imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

if TYPE_CHECKING:
    from dist2loss.loss import (
        causal_dist2_loss,
        dist2_kl,
        dist2_loss,
        dist2_targets,
        neighbor_negative_nll,
        place_values,
    )
    from dist2loss.metric import (
        MetricTable,
        coordinate_table,
        entropy_matched_tau,
        number_table,
        number_table_from_tokenizer,
        target_entropy,
        vq_table,
    )

_HOME = {
    "causal_dist2_loss": "loss",
    "dist2_kl": "loss",
    "dist2_loss": "loss",
    "dist2_targets": "loss",
    "neighbor_negative_nll": "loss",
    "place_values": "loss",
    "MetricTable": "metric",
    "coordinate_table": "metric",
    "entropy_matched_tau": "metric",
    "number_table": "metric",
    "number_table_from_tokenizer": "metric",
    "target_entropy": "metric",
    "vq_table": "metric",
}
__all__ = [
    "MetricTable",
    "causal_dist2_loss",
    "coordinate_table",
    "dist2_kl",
    "dist2_loss",
    "dist2_targets",
    "entropy_matched_tau",
    "neighbor_negative_nll",
    "number_table",
    "number_table_from_tokenizer",
    "place_values",
    "target_entropy",
    "vq_table",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOME)
