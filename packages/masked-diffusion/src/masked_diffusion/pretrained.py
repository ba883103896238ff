"""`MDLM`: the denoiser as a checkpoint (``shared_core.hub``), with what its token ids mean.

``MDLM(MDLMConfig(backbone, data, schedule))`` is a `MaskedDiffusionTransformer` that saves and
loads itself (``save_pretrained`` / ``from_pretrained``); config.json holds the backbone's sizes,
the noise schedule and the `TokenSpec` (the character vocabulary, or the image size and bit depth).
"""

from __future__ import annotations

from dataclasses import dataclass

from masked_diffusion.backbone import BackboneConfig, MaskedDiffusionTransformer
from masked_diffusion.corpus import TokenSpec
from masked_diffusion.schedule import SCHEDULES
from shared_core.hub import Pretrained


@dataclass(frozen=True)
class MDLMConfig:
    """A trained MDLM: the denoiser's sizes, what its ids mean, its noise schedule's name."""

    backbone: BackboneConfig
    data: TokenSpec
    schedule: str = "loglinear"

    def __post_init__(self) -> None:
        check_checkpoint_config(self.backbone.vocab_size, self.data, self.schedule, "backbone")


def check_checkpoint_config(vocab_size: int, data: TokenSpec, schedule: str, network: str) -> None:
    """The checks every masked-diffusion-family checkpoint config makes (MDLM, PGM, VADD): the
    network's output size is the data's vocabulary, and the schedule is a known one."""
    if vocab_size != data.vocab_size:
        raise ValueError(
            f"{network}.vocab_size: expected the data's {data.vocab_size}, got {vocab_size}"
        )
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule: expected one of {sorted(SCHEDULES)}, got {schedule!r}")


class MDLM(MaskedDiffusionTransformer, Pretrained):
    """The MDLM denoiser ``model(x_t, t) -> logits (batch, length, vocab_size)`` as a checkpoint."""

    def __init__(self, config: MDLMConfig) -> None:
        super().__init__(config.backbone)
        self.config = config
