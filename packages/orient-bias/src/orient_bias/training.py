"""The recipe both torch models train with, on `shared_core.train.fit` (the one loop).

This module adds only what is orient-bias's own: epochs of shuffled minibatches as a pure
function of the step (`epoch_batches`), the paper's optimiser settings (`TrainConfig`), and
batched prediction. Warm-up + cosine schedule, AdamW, clipping, DDP under torchrun and
checkpoints come from `shared_core.train`. torch is the ``torch`` extra.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from shared_core.data import require_extra

if TYPE_CHECKING:
    import torch
    from torch import nn

__all__ = ["TrainConfig", "epoch_batches", "predict", "train"]


@dataclass(frozen=True)
class TrainConfig:
    """Defaults follow the paper's classifier (AdamW lr 5e-4, wd 5e-3, clip 0.5, batch 128).

    The schedule: linear warm-up over `warmup_epochs`, then cosine decay to 1e-3 x `lr`.
    """

    epochs: int = 20
    batch_size: int = 128
    lr: float = 5e-4
    weight_decay: float = 5e-3  # on weight matrices (biases and embeddings' 1-D params: none)
    warmup_epochs: int = 2
    grad_clip: float = 0.5
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        for name in ("warmup_epochs", "seed"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name}: expected a non-negative int, got {v!r}")
        if not (isinstance(self.lr, int | float) and math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr: expected a finite positive learning rate, got {self.lr!r}")
        if not (isinstance(self.weight_decay, int | float) and self.weight_decay >= 0):
            raise ValueError(f"weight_decay: expected a number >= 0, got {self.weight_decay!r}")
        if not (isinstance(self.grad_clip, int | float) and self.grad_clip >= 0):
            raise ValueError(
                f"grad_clip: expected a number >= 0 (0 disables), got {self.grad_clip!r}"
            )
        if not isinstance(self.device, str):
            raise TypeError(
                f"device: expected a string such as 'cpu' or 'cuda', got {self.device!r}"
            )

    def fit_config(self, n_rows: int) -> Any:
        """The `shared_core.train.TrainConfig` of this recipe for a training set of `n_rows`."""
        from shared_core.train import TrainConfig as FitConfig

        steps_per_epoch = math.ceil(n_rows / self.batch_size)
        return FitConfig(
            steps=self.epochs * steps_per_epoch,
            lr=self.lr,
            warmup=self.warmup_epochs * steps_per_epoch,
            schedule="cosine",
            min_lr_ratio=1e-3,
            weight_decay=self.weight_decay,
            betas=(0.9, 0.999),  # torch's AdamW default, as in the paper's code
            grad_clip=self.grad_clip,
        )


def epoch_batches(
    arrays: tuple[torch.Tensor, ...], batch_size: int, seed: int
) -> Callable[[int], tuple[torch.Tensor, ...]]:
    """``batch_fn(step)``: epochs of shuffled minibatches, a pure function of the step.

    Epoch ``e = step // steps_per_epoch`` visits every row once in the order of a
    permutation drawn from ``step_generator(seed, e)``; the last batch of an epoch may be
    smaller. The permutation of the current epoch is cached (it is a function of `e` only).
    """
    import torch

    from shared_core.train import step_generator

    n = len(arrays[0])
    per_epoch = math.ceil(n / batch_size)
    cache: dict[int, torch.Tensor] = {}

    def batch_fn(step: int) -> tuple[torch.Tensor, ...]:
        epoch, k = divmod(step, per_epoch)
        if epoch not in cache:
            cache.clear()
            cache[epoch] = torch.randperm(n, generator=step_generator(seed, epoch))
        idx = cache[epoch][k * batch_size : (k + 1) * batch_size]
        return tuple(a[idx] for a in arrays)

    return batch_fn


def train(
    model: nn.Module,
    inputs: tuple[np.ndarray, ...],
    target: np.ndarray,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    config: TrainConfig = TrainConfig(),
    desc: str = "train",
    checkpoint: str | None = None,
) -> tuple[nn.Module, list[float]]:
    """Fit ``model(*inputs) -> target`` with `shared_core.train.fit`; return the model and the
    mean training loss of each epoch.

    inputs: arrays with one row per example (e.g. positions ``(M, N, 3)``, numbers ``(M, N)``);
    target: ``(M, ...)``; loss_fn: ``loss_fn(prediction, target) -> scalar``; desc: the
    progress bar's phase (``"point-cloud net train"``); checkpoint: a file to resume from.
    """
    require_extra("orient-bias", "torch", "torch", "training")
    import torch

    from shared_core.train import fit

    if not isinstance(config, TrainConfig):
        raise TypeError(f"config: expected an orient_bias TrainConfig, got {type(config).__name__}")
    if not isinstance(inputs, tuple) or not inputs:
        raise TypeError(
            f"inputs: expected a non-empty tuple of arrays, got {type(inputs).__name__}"
        )
    n = len(target)
    if n == 0:
        raise ValueError("target: expected at least one row, got an empty array")
    if any(len(a) != n for a in inputs):
        raise ValueError(
            f"inputs: every array needs {n} rows like target, got {[len(a) for a in inputs]}"
        )
    for name, a in [*((f"inputs[{i}]", a) for i, a in enumerate(inputs)), ("target", target)]:
        arr = np.asarray(a)
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}: contains NaN or infinite values")
    arrays = (
        *(torch.as_tensor(np.asarray(a)) for a in inputs),
        torch.as_tensor(np.asarray(target)),
    )
    fc = config.fit_config(n)
    torch.manual_seed(config.seed)

    def loss(m: Any, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return loss_fn(m(*batch[:-1]), batch[-1])

    result = fit(
        model, loss, epoch_batches(arrays, config.batch_size, config.seed), fc,
        checkpoint=checkpoint, desc=desc, device=config.device,
    )  # fmt: skip
    per_epoch = math.ceil(n / config.batch_size)
    sizes = np.array([min(config.batch_size, n - k * config.batch_size) for k in range(per_epoch)])
    steps = np.asarray(result.losses).reshape(-1, per_epoch)
    return model, (steps @ sizes / n).tolist()


def predict(model: nn.Module, inputs: tuple[np.ndarray, ...], batch_size: int = 1024) -> np.ndarray:
    """Model outputs for all rows, in evaluation mode, as float64 numpy."""
    require_extra("orient-bias", "torch", "torch", "prediction")
    import torch

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size: expected a positive int, got {batch_size!r}")
    model.eval()
    dev = next(model.parameters()).device
    n = len(inputs[0])
    outs = []
    with torch.no_grad():
        for s in range(0, n, batch_size):
            chunk = (torch.as_tensor(a[s : s + batch_size]).to(dev) for a in inputs)
            outs.append(model(*chunk).cpu())
    return torch.cat(outs).double().numpy()
