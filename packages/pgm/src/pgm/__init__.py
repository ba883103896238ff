"""Partition Generative Models (Deschenaux, Tran, Gulcehre, ICLR 2026) on top of masked-diffusion."""

from pgm.loss import PartitionLoss, as_denoiser, partition_terms, pgm_loss, pgm_nelbo
from pgm.model import (
    DecoderBlock,
    EncoderBlock,
    GroupSwap,
    PartitionTransformer,
    PGMConfig,
    check_groups,
    masked_attention,
)
from pgm.sampling import pgm_confidence_sample, pgm_ordered_sample

__version__ = "0.1.0"

__all__ = [
    "DecoderBlock",
    "EncoderBlock",
    "GroupSwap",
    "PGMConfig",
    "PartitionLoss",
    "PartitionTransformer",
    "as_denoiser",
    "check_groups",
    "masked_attention",
    "partition_terms",
    "pgm_confidence_sample",
    "pgm_loss",
    "pgm_nelbo",
    "pgm_ordered_sample",
]
