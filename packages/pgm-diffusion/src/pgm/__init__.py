"""Partition Generative Models (Deschenaux, Tran, Gulcehre, ICLR 2026) on top of masked-diffusion.

Names are imported lazily (PEP 562): ``import pgm`` and the console script's ``--help`` do not
pay for torch until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "PartitionLoss": "loss",
    "as_denoiser": "loss",
    "partition_terms": "loss",
    "pgm_loss": "loss",
    "pgm_loss_fn": "loss",
    "pgm_nelbo": "loss",
    "DecoderBlock": "model",
    "EncoderBlock": "model",
    "GroupSwap": "model",
    "PartitionTransformer": "model",
    "PGMConfig": "model",
    "check_groups": "model",
    "masked_attention": "model",
    "PGM": "pretrained",
    "PGMModelConfig": "pretrained",
    "pgm_confidence_sample": "sampling",
    "pgm_ordered_sample": "sampling",
}

__all__ = [
    "PGM",
    "DecoderBlock",
    "EncoderBlock",
    "GroupSwap",
    "PGMConfig",
    "PGMModelConfig",
    "PartitionLoss",
    "PartitionTransformer",
    "as_denoiser",
    "check_groups",
    "masked_attention",
    "partition_terms",
    "pgm_confidence_sample",
    "pgm_loss",
    "pgm_loss_fn",
    "pgm_nelbo",
    "pgm_ordered_sample",
]

if TYPE_CHECKING:
    from pgm.loss import (
        PartitionLoss,
        as_denoiser,
        partition_terms,
        pgm_loss,
        pgm_loss_fn,
        pgm_nelbo,
    )
    from pgm.model import (
        DecoderBlock,
        EncoderBlock,
        GroupSwap,
        PartitionTransformer,
        PGMConfig,
        check_groups,
        masked_attention,
    )
    from pgm.pretrained import PGM, PGMModelConfig
    from pgm.sampling import pgm_confidence_sample, pgm_ordered_sample


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
