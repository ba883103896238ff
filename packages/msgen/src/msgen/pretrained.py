"""`MSGENModel`: a trained MSGEN (stage-1 heavy-atom generator, the upsampler's settings and the
stage-2 all-atom generator) as one `shared_core.hub` checkpoint folder.

The folder's ``model.safetensors`` holds every stage's network (``nets.0.*`` stage 1,
``nets.1.*`` stage 2, ...); ``config.json`` the `MSGENConfig`: each stage's `DiffusionConfig`,
the coarse scales, the upsampling distance tau and anchor (the upsampler has no weights), and
the guide error level each stage is told (`MSGEN.calibrate`, None when not measured).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import nn

from msgen.data import SCALES
from msgen.diffusion import DiffusionConfig, DiffusionGenerator
from msgen.multiscale import MSGEN
from msgen.upsampling import ANCHORS, TAU
from shared_core.hub import Pretrained


@dataclass(frozen=True)
class MSGENConfig:
    """stages: ``len(scales) + 1`` generator configs, coarse first (stage 1 unguided)."""

    stages: tuple[DiffusionConfig, ...] = field(default_factory=lambda: (DiffusionConfig(),))
    scales: tuple[str, ...] = ("heavy",)
    tau: float = TAU
    anchor: str = "bonded"
    guide_sigma: tuple[float, ...] = ()  # told level per stage (calibrated networks), or ()

    def __post_init__(self) -> None:
        if len(self.stages) != len(self.scales) + 1:
            raise ValueError(
                f"stages: expected len(scales) + 1 = {len(self.scales) + 1} configs, got "
                f"{len(self.stages)}"
            )
        if any(s not in SCALES for s in self.scales):
            raise ValueError(f"scales: expected entries of {SCALES}, got {self.scales}")
        if self.anchor not in ANCHORS:
            raise ValueError(f"anchor: expected one of {ANCHORS}, got {self.anchor!r}")
        if self.guide_sigma and len(self.guide_sigma) != len(self.stages):
            raise ValueError(
                f"guide_sigma: expected () or one level per stage ({len(self.stages)}), got "
                f"{self.guide_sigma}"
            )


class MSGENModel(nn.Module, Pretrained):
    """The stages' networks (``nets``) and an `MSGEN` over them (`msgen`)."""

    def __init__(self, config: MSGENConfig) -> None:
        super().__init__()
        self.config = config
        self.generators = [DiffusionGenerator(c) for c in config.stages]
        self.nets = nn.ModuleList(g.net for g in self.generators)

    @property
    def msgen(self) -> MSGEN:
        """The pipeline over this model's networks (marked trained: they hold the weights)."""
        for g in self.generators:
            g.fitted = True
        model = MSGEN(self.generators, self.config.scales, self.config.tau, self.config.anchor)
        if self.config.guide_sigma:
            model.guide_sigma = list(self.config.guide_sigma)
        return model
