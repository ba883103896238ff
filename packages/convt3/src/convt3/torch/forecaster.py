"""`Forecaster`: a `FramePredictor` with its data normalisation, saved and loaded as one folder.

The verbs (`convt3.verbs`) train it on a user's sequences ``(N, T, C, H, W)``: every channel is
predicted (next frame from the frames so far), in units normalised per channel by the training
set's mean and standard deviation, which the config keeps. The model is convolutional and its
sine bases are built per grid, so a checkpoint rolls out on any grid the layer supports, not
only the one it was trained on (`ForecasterConfig.grid` records that one).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from convt3.torch.model import FramePredictor, PredictorConfig
from shared_core.hub import Pretrained


@dataclass(frozen=True)
class ForecasterConfig:
    """The network and the per-channel normalisation of the data it was trained on."""

    predictor: PredictorConfig = field(default_factory=PredictorConfig)
    mean: tuple[float, ...] = (0.0,)  # per channel, subtracted before the network
    std: tuple[float, ...] = (1.0,)  # per channel, divided by before the network
    grid: tuple[int, int] = (16, 16)  # (H, W) of the training data (other grids also run)


class Forecaster(nn.Module, Pretrained):
    """``frames (N, T, C, H, W)`` in data units -> closed-loop rollouts in data units."""

    mean: torch.Tensor  # (1, 1, C, 1, 1) buffers, declared for the type checker
    std: torch.Tensor

    def __init__(self, config: ForecasterConfig) -> None:
        super().__init__()
        channels = config.predictor.in_channels
        if config.predictor.out_channels != channels:
            raise ValueError(
                f"config: a forecaster predicts every channel; expected out_channels == "
                f"in_channels={channels}, got {config.predictor.out_channels}"
            )
        if len(config.mean) != channels or len(config.std) != channels:
            raise ValueError(
                f"config: expected mean and std of length {channels} (one per channel), got "
                f"{len(config.mean)} and {len(config.std)}"
            )
        if not all(s > 0 and np.isfinite(s) for s in config.std):
            raise ValueError(f"config.std: expected finite values > 0, got {config.std}")
        self.config = config
        self.net = FramePredictor(config.predictor)
        self.register_buffer("mean", torch.tensor(config.mean).view(1, 1, -1, 1, 1), False)
        self.register_buffer("std", torch.tensor(config.std).view(1, 1, -1, 1, 1), False)

    def normalise(self, frames: torch.Tensor) -> torch.Tensor:
        """Data units -> the network's units (same shape ``(N, T, C, H, W)``)."""
        return (frames - self.mean) / self.std

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        """Teacher-forced next frames ``(N, T, C, H, W)``, in normalised units."""
        return self.net(self.normalise(frames))

    @torch.no_grad()
    def rollout(self, context: torch.Tensor, steps: int) -> torch.Tensor:
        """Read `context` ``(N, T0, C, H, W)``, predict the next `steps` frames ``(N, steps, C, H, W)``."""
        pred = self.net.rollout(self.normalise(context.to(self.mean.dtype)), steps)
        return pred * self.std + self.mean
