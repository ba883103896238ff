"""The training loop shared by both torch models (nanoGPT-simple): AdamW, linear warm-up then
cosine decay, gradient clipping; starts through `init_distributed`, so it runs under torchrun
(each rank takes a strided shard of every batch, DDP averages the gradients)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from shared_core.cli import progress
from shared_core.distributed import init_distributed, is_main, wrap_ddp

__all__ = ["TrainConfig", "predict", "train"]


@dataclass(frozen=True)
class TrainConfig:
    """Defaults follow the paper's classifier (AdamW lr 5e-4, wd 5e-3, clip 0.5, batch 128)."""

    epochs: int = 20
    batch_size: int = 128
    lr: float = 5e-4
    weight_decay: float = 5e-3
    warmup_epochs: int = 2
    grad_clip: float = 0.5
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size"):
            v = getattr(self, name)
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if self.lr <= 0:
            raise ValueError(f"lr: expected a positive learning rate, got {self.lr}")


def train(
    model: nn.Module,
    inputs: tuple[np.ndarray, ...],
    target: np.ndarray,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    config: TrainConfig = TrainConfig(),
    desc: str = "train",
) -> tuple[nn.Module, list[float]]:
    """Fit ``model(*inputs) -> target`` by minibatch AdamW; return the model and per-epoch losses."""
    n = len(target)
    if any(len(a) != n for a in inputs):
        raise ValueError(f"inputs: every array needs {n} rows like target")
    info = init_distributed(config.device)
    torch.manual_seed(config.seed)
    net = wrap_ddp(model, info)
    opt = torch.optim.AdamW(net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    steps_per_epoch = math.ceil(n / config.batch_size)
    total, warm = config.epochs * steps_per_epoch, config.warmup_epochs * steps_per_epoch

    def lr_at(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        t = (step - warm) / max(1, total - warm)
        return 0.5 * (1 + math.cos(math.pi * t)) * (1 - 1e-3) + 1e-3

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    tensors = [torch.as_tensor(a).to(info.device) for a in inputs]
    y = torch.as_tensor(target).to(info.device)
    gen = torch.Generator().manual_seed(config.seed)
    history = []
    net.train()
    for _ in progress(range(config.epochs), desc=desc, enabled=is_main()):
        order = torch.randperm(n, generator=gen).to(info.device)
        running = 0.0
        for s in range(0, n, config.batch_size):
            idx = order[s : s + config.batch_size][info.rank :: info.world_size]
            loss = loss_fn(net(*(t[idx] for t in tensors)), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), config.grad_clip)
            opt.step()
            sched.step()
            running += loss.item() * len(idx)
        history.append(running / n * info.world_size)
    return model, history


@torch.no_grad()
def predict(model: nn.Module, inputs: tuple[np.ndarray, ...], batch_size: int = 1024) -> np.ndarray:
    """Model outputs for all rows, in evaluation mode, as float64 numpy."""
    model.eval()
    dev = next(model.parameters()).device
    n = len(inputs[0])
    outs = []
    for s in range(0, n, batch_size):
        outs.append(model(*(torch.as_tensor(a[s : s + batch_size]).to(dev) for a in inputs)).cpu())
    return torch.cat(outs).double().numpy()
