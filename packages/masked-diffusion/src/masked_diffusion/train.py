"""A small, reusable training loop (nanoGPT-style) on shared_core: any model, any loss function.

``loss_fn(model, batch, generator) -> scalar tensor``; batches are rows of a (rows, length) token
tensor drawn by a seed derived from (seed, step), and the loss noise comes from a generator seeded
the same way, so a run resumed from a checkpoint continues exactly as the uninterrupted one.
Starts through ``shared_core.distributed.init_distributed`` (runs under torchrun with DDP).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from shared_core.checkpoint import load_checkpoint, save_checkpoint
from shared_core.cli import progress
from shared_core.distributed import DistInfo, all_reduce_mean, init_distributed, wrap_ddp

LossFn = Callable[[torch.nn.Module, torch.Tensor, torch.Generator], torch.Tensor]


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings (AdamW, linear warm-up then constant LR, grad clipping; MDLM's)."""

    steps: int = 300
    batch_size: int = 32
    lr: float = 1e-3
    warmup: int = 50
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    seed: int = 0
    device: str = "auto"
    checkpoint_path: str | None = None
    checkpoint_every: int = 0
    show_progress: bool = True

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size"):
            v = getattr(self, name)
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if not self.lr > 0:
            raise ValueError(f"lr: expected > 0, got {self.lr!r}")


@dataclass
class TrainResult:
    """Per-step training losses (this process's view, averaged over ranks) and the last step."""

    losses: list[float] = field(default_factory=list)
    step: int = 0


def step_generator(seed: int, step: int, device: torch.device | str = "cpu") -> torch.Generator:
    """The generator of the loss noise at `step` (a pure function of seed and step)."""
    return torch.Generator(device=device).manual_seed(seed * 1_000_003 + step)


def train(
    model: torch.nn.Module,
    loss_fn: LossFn,
    data: torch.Tensor,
    config: TrainConfig,
    *,
    resume: bool = False,
    stop_at: int | None = None,
    info: DistInfo | None = None,
) -> TrainResult:
    """Train `model` on rows of `data` for ``config.steps`` steps; return the losses.

    With `resume` and an existing ``config.checkpoint_path``, continue from it. `stop_at` ends
    the loop early (after that many steps, a checkpoint is written when a path is set), which
    is how the tests interrupt and resume a run.
    """
    if not isinstance(data, torch.Tensor) or data.ndim != 2:
        raise ValueError("data: expected a (rows, length) tensor of token ids")
    info = info or init_distributed(config.device)
    model = model.to(info.device)
    ddp = wrap_ddp(model, info)
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    warm = max(config.warmup, 1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
    result = TrainResult()
    start = 0
    ckpt = Path(config.checkpoint_path) if config.checkpoint_path else None
    if resume and ckpt is not None and ckpt.is_file():
        state = load_checkpoint(ckpt, model=model, optimizer=opt, scheduler=sched)
        start = state["step"]
        result.losses = list(state["extra"].get("losses", []))
    end = config.steps if stop_at is None else min(stop_at, config.steps)
    rows = data.shape[0]
    model.train()
    for step in progress(
        range(start, end), desc="train", enabled=config.show_progress and info.is_main
    ):
        rng = np.random.default_rng([config.seed, step])
        idx = rng.integers(0, rows, size=config.batch_size)
        idx = idx[info.rank :: info.world_size]
        batch = data[torch.from_numpy(idx)].to(info.device)
        loss = loss_fn(ddp, batch, step_generator(config.seed + info.rank, step, info.device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        opt.step()
        sched.step()
        result.losses.append(float(all_reduce_mean(loss.detach())))
        result.step = step + 1
        every = config.checkpoint_every
        if ckpt is not None and info.is_main and every > 0 and (step + 1) % every == 0:
            _save(ckpt, model, opt, sched, step + 1, result)
    result.step = max(result.step, start)
    if ckpt is not None and info.is_main and result.step > start:
        _save(ckpt, model, opt, sched, result.step, result)
    model.eval()
    return result


def _save(path: Path, model, opt, sched, step: int, result: TrainResult) -> None:
    save_checkpoint(
        path,
        model=model,
        optimizer=opt,
        scheduler=sched,
        step=step,
        extra={"losses": list(result.losses)},
    )
