"""The training loop shared by the experiments: AdamW, warm-up + cosine, grad clipping, checkpoints.

Batches come from ``batch_fn(index)``, a pure function of the step, so a run resumed from a
checkpoint sees the same data and ends at the same weights as an uninterrupted one. Under
torchrun (``shared_core.distributed.init_distributed``) rank r of w draws batch
``step * w + r`` and gradients are averaged over ranks (data parallel); alone, ``index = step``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from mesa_layer.torch.model import param_groups
from shared_core.checkpoint import load_checkpoint, save_checkpoint
from shared_core.cli import progress
from shared_core.distributed import all_reduce_mean, is_main


@dataclass
class TrainConfig:
    """Optimiser settings (the defaults of the research notes, tiny scale)."""

    steps: int = 200
    lr: float = 3e-3
    warmup: int = 20
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    checkpoint_every: int = 0

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError(f"steps: expected a positive int, got {self.steps}")
        if not self.lr > 0:
            raise ValueError(f"lr: expected > 0, got {self.lr}")


def lr_at(step: int, cfg: TrainConfig) -> float:
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    frac = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))


def train(
    model: torch.nn.Module,
    batch_fn: Callable[[int], Any],
    loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor],
    cfg: TrainConfig,
    checkpoint: str | Path | None = None,
    desc: str = "train",
    stop_at: int | None = None,
) -> list[float]:
    """Train `model` for ``cfg.steps`` steps; resume from `checkpoint` if it exists.

    `stop_at` ends the loop early (after saving a checkpoint): used to test resumption.
    Returns the training losses of the steps this call ran.
    """
    opt = torch.optim.AdamW(param_groups(model, cfg.weight_decay), lr=cfg.lr, betas=(0.9, 0.95))
    start = 0
    if checkpoint is not None and Path(checkpoint).exists():
        start = int(load_checkpoint(checkpoint, model=model, optimizer=opt)["step"])
    dist = torch.distributed
    parallel = dist.is_available() and dist.is_initialized()
    world, rank = (dist.get_world_size(), dist.get_rank()) if parallel else (1, 0)
    losses = []
    end = cfg.steps if stop_at is None else min(stop_at, cfg.steps)
    model.train()
    for step in progress(range(start, end), desc=desc, enabled=is_main()):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        loss = loss_fn(model, batch_fn(step * world + rank))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if parallel:
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.copy_(all_reduce_mean(p.grad))
            loss = all_reduce_mean(loss)
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        losses.append(loss.item())
        done = step + 1
        if (
            is_main()
            and checkpoint is not None
            and (done == end or (cfg.checkpoint_every and done % cfg.checkpoint_every == 0))
        ):
            save_checkpoint(checkpoint, model=model, optimizer=opt, step=done)
    model.eval()
    return losses
