"""`VARGenerator`: a trained tokenizer and VAR as one checkpoint folder (`shared_core.hub`).

The verbs (`toprovar.verbs`) train it on a user's image folder (one sub-folder per class) and
generate from it under a pruning policy. The scales follow from the image side: with the
tokenizer's 2x downsampling a ``side`` image has a ``side / 2`` feature map and the scales are
the powers of two below it, then the side itself (``32 -> (1, 2, 4, 8, 16)``,
``24 -> (1, 2, 4, 8, 12)``), VAR's coarse-to-fine schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from shared_core.hub import Pretrained
from toprovar.model import TinyVAR
from toprovar.vq import MultiScaleVQ


def scales_for(side: int, downsample: int = 2) -> tuple[int, ...]:
    """VAR's token-map sides for ``side x side`` images: powers of two below the feature side, then it."""
    if isinstance(side, bool) or not isinstance(side, int) or side < 2 * downsample:
        raise ValueError(f"side: expected an int >= {2 * downsample}, got {side!r}")
    if side % downsample:
        raise ValueError(f"side: expected a multiple of downsample={downsample}, got {side}")
    feature = side // downsample
    out = [1]
    while out[-1] * 2 < feature:
        out.append(out[-1] * 2)
    return (*out, feature)


@dataclass(frozen=True)
class GeneratorConfig:
    """The tokenizer, the VAR and what they were trained on."""

    classes: tuple[str, ...] = ("0",)  # class names (the image folder's sub-folders), sorted
    channels: int = 1  # 1: greyscale, 3: RGB
    side: int = 16  # image side in pixels
    downsample: int = 2  # image side / feature side (1 or 2)
    vocab: int = 64  # shared codebook size
    latent: int = 16  # codebook vector size (VAR's Cvae)
    hidden: int = 32  # tokenizer conv width
    dim: int = 64  # transformer width
    depth: int = 4  # transformer blocks
    heads: int = 4
    cond_drop: float = 0.1  # null-class rate in training (classifier-free guidance)


class VARGenerator(nn.Module, Pretrained):
    """``vq`` (`MultiScaleVQ`) and ``var`` (`TinyVAR`) for ``config.side``-pixel images."""

    def __init__(self, config: GeneratorConfig) -> None:
        super().__init__()
        if not config.classes:
            raise ValueError("config.classes: expected at least one class name, got none")
        if config.channels not in (1, 3):
            raise ValueError(f"config.channels: expected 1 or 3, got {config.channels}")
        self.config = config
        scales = scales_for(config.side, config.downsample)
        self.vq = MultiScaleVQ(
            config.channels, config.hidden, config.latent, config.vocab, scales,
            downsample=config.downsample,
        )  # fmt: skip
        self.var = TinyVAR(
            config.vocab, config.latent, scales, len(config.classes), config.dim,
            config.depth, config.heads, cond_drop=config.cond_drop,
        )  # fmt: skip

    @property
    def scales(self) -> tuple[int, ...]:
        return self.vq.scales

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """The tokenizer's reconstruction of ``images (B, C, side, side)`` in [-1, 1]."""
        return self.vq(images)[0]
