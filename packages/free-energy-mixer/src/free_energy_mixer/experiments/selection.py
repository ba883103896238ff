"""Finding 1: FEM selects per value channel with fewer heads than its base read.

A one-layer network (input projection, one mixer with a residual, a per-channel classifier)
learns the generated per-channel selection tasks of `free_energy_mixer.data` (``"position"``:
each channel recalls its value at its own marked position; ``"max"``: each channel's
running maximum). The six mixers are trained by `shared_core.train.fit` on the same batches
and budget, at each number of heads; the result is the accuracy on fresh batches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from free_energy_mixer.data import selection_batch
from free_energy_mixer.experiments.common import count_parameters, train_config
from free_energy_mixer.layer import FEMConfig
from free_energy_mixer.model import MIXERS, make_mixer
from shared_core.train import TrainConfig, fit, step_generator


@dataclass
class SelectionConfig:
    """The selection sweep: tasks x mixers x heads."""

    tasks: tuple[str, ...] = ("position", "max")
    mixers: tuple[str, ...] = MIXERS
    heads: tuple[int, ...] = (1, 2, 4)
    channels: int = 8  # value channels that each select on their own
    levels: int = 4  # values per channel (chance accuracy 1/levels)
    T: int = 32
    d_model: int = 64
    tdc_hidden: int = 8
    batch_size: int = 32
    eval_batches: int = 4
    eval_batch_size: int = 128
    train: TrainConfig = field(default_factory=lambda: train_config(300))


class SelectionNet(nn.Module):
    """``x (B, T, 2C) -> logits (B, T, C, levels)``: projection, one mixer (residual), classifier."""

    def __init__(self, mixer: str, heads: int, cfg: SelectionConfig) -> None:
        super().__init__()
        D = cfg.d_model
        self.channels, self.levels = cfg.channels, cfg.levels
        self.inp = nn.Linear(2 * cfg.channels, D)
        self.norm = nn.LayerNorm(D)
        self.mixer = make_mixer(mixer, FEMConfig(D, heads, prior=mixer.removeprefix("fem-"),
                                                 tdc_hidden=cfg.tdc_hidden))  # fmt: skip
        self.out_norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, cfg.channels * cfg.levels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        h = h + self.mixer(self.norm(h))
        B, T, _ = h.shape
        return self.head(self.out_norm(h)).view(B, T, self.channels, self.levels)


def _loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    logits = model(batch[0])
    return F.cross_entropy(logits.flatten(0, 2), batch[1].flatten(), ignore_index=-100)


@torch.no_grad()
def accuracy(model: nn.Module, task: str, cfg: SelectionConfig, seed: int, device: str) -> float:
    """Fraction of defined (position, channel) targets predicted exactly, on fresh batches."""
    model.eval()
    right = total = 0
    for i in range(cfg.eval_batches):
        g = step_generator(seed + 7919, i)
        x, y = selection_batch(task, cfg.eval_batch_size, cfg.T, cfg.channels, cfg.levels, g)
        pred = model(x.to(device)).argmax(-1).cpu()
        keep = y != -100
        right += int((pred[keep] == y[keep]).sum())
        total += int(keep.sum())
    return right / total


def run(cfg: SelectionConfig, seed: int = 0, device: str = "cpu") -> dict[str, Any]:
    """Train every (task, mixer, heads); return accuracies ``[task][mixer] -> list over heads``."""
    acc: dict[str, dict[str, list[float]]] = {}
    params: dict[str, dict[str, list[int]]] = {}
    for task in cfg.tasks:
        acc[task], params[task] = {}, {}
        for mixer in cfg.mixers:
            acc[task][mixer], params[task][mixer] = [], []
            for heads in cfg.heads:
                torch.manual_seed(seed)
                model = SelectionNet(mixer, heads, cfg)

                def batch_fn(step: int, task: str = task) -> tuple[torch.Tensor, torch.Tensor]:
                    g = step_generator(seed, step)
                    return selection_batch(task, cfg.batch_size, cfg.T, cfg.channels, cfg.levels, g)

                fit(model, _loss, batch_fn, cfg.train, device=device,
                    desc=f"selection {task} {mixer} H={heads} train")  # fmt: skip
                acc[task][mixer].append(accuracy(model, task, cfg, seed, device))
                params[task][mixer].append(count_parameters(model.mixer))
    return {"heads": list(cfg.heads), "accuracy": acc, "mixer_params": params}
