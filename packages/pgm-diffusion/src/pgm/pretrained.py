"""`PGM`: the partition network as a checkpoint (``shared_core.hub``), with what its ids mean.

``PGM(PGMModelConfig(model, data, schedule))`` is a `PartitionTransformer` that saves and loads
itself; config.json holds its sizes, the noise schedule of its training partitions and
masked-diffusion's `TokenSpec` (the character vocabulary, or the image size and bit depth).
"""

from __future__ import annotations

from dataclasses import dataclass

from masked_diffusion import TokenSpec
from masked_diffusion.pretrained import check_checkpoint_config

from pgm.model import PartitionTransformer, PGMConfig
from shared_core.hub import Pretrained


@dataclass(frozen=True)
class PGMModelConfig:
    """A trained PGM: the network's sizes, what its ids mean, its schedule's name."""

    model: PGMConfig
    data: TokenSpec
    schedule: str = "loglinear"

    def __post_init__(self) -> None:
        check_checkpoint_config(self.model.vocab_size, self.data, self.schedule, "model")


class PGM(PartitionTransformer, Pretrained):
    """The partition network ``model(x0, groups) -> logits (batch, L, vocab_size)`` as a checkpoint."""

    distribution = "pgm-diffusion"  # the import name (pgm) differs from the distribution's

    def __init__(self, config: PGMModelConfig) -> None:
        super().__init__(config.model)
        self.config = config
