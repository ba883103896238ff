"""`VADDModel`: the VADD decoder and recognition model as a checkpoint (``shared_core.hub``).

``VADDModel(VADDModelConfig(model, data, schedule))`` is a `VADD` that saves and loads itself;
config.json holds its sizes, the noise schedule it was trained with and masked-diffusion's
`TokenSpec` (the character vocabulary, or the image size and bit depth).
"""

from __future__ import annotations

from dataclasses import dataclass

from masked_diffusion import TokenSpec
from masked_diffusion.pretrained import check_checkpoint_config

from shared_core.hub import Pretrained
from vadd.model import VADD, VADDConfig


@dataclass(frozen=True)
class VADDModelConfig:
    """A trained VADD: the networks' sizes, what its ids mean, its schedule's name."""

    model: VADDConfig
    data: TokenSpec
    schedule: str = "loglinear"

    def __post_init__(self) -> None:
        check_checkpoint_config(self.model.vocab_size, self.data, self.schedule, "model")


class VADDModel(VADD, Pretrained):
    """A `VADD` (``model.logits(x_t, t, z)``, ``model.posterior(x0, x_t, t)``) as a checkpoint."""

    def __init__(self, config: VADDModelConfig) -> None:
        super().__init__(config.model)
        self.config = config
