"""Epoch-wise training through `shared_core.train.fit`, with an evaluation after each epoch.

`fit` takes steps; an epoch here is ``len(train_idx) // batch_size`` steps over a fresh
permutation (a pure function of the seed and the epoch, so runs resume exactly). The last
partial batch is dropped, so BatchNorm never sees a batch of one. After every epoch
`evaluate(model)` runs in eval mode under ``torch.no_grad()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from shared_core.cli import phase
from shared_core.train import TrainConfig, fit


def adam_config(steps: int, lr: float = 1e-3, weight_decay: float = 1e-4) -> TrainConfig:
    """The authors' optimiser as closely as `fit` allows: Adam(lr 1e-3, betas 0.9/0.999,
    weight decay 1e-4), constant rate, no clipping (here decoupled AdamW decay on matrices)."""
    return TrainConfig(
        steps=steps, lr=lr, warmup=0, schedule="constant", weight_decay=weight_decay,
        betas=(0.9, 0.999), grad_clip=0.0,
    )  # fmt: skip


def train_epochs(
    model: torch.nn.Module,
    loss_fn: Callable[[Any, Any], torch.Tensor],
    make_batch: Callable[[np.ndarray], Any],
    train_idx: np.ndarray,
    epochs: int,
    batch_size: int,
    evaluate: Callable[[torch.nn.Module], dict[str, float]],
    *,
    seed: int = 0,
    lr: float = 1e-3,
    weight_decay: float = 1e-4,
    device: str = "cpu",
    desc: str = "train",
) -> list[dict[str, float]]:
    """Train `model` for `epochs` epochs; return `evaluate`'s dict after each epoch."""
    train_idx = np.asarray(train_idx)
    if len(train_idx) < 2:
        raise ValueError(f"train_idx: expected at least 2 training samples, got {len(train_idx)}")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs: expected a positive int, got {epochs!r}")
    bs = min(batch_size, len(train_idx))
    per_epoch = len(train_idx) // bs

    def batch_fn(step: int) -> Any:
        epoch, k = divmod(step, per_epoch)
        perm = np.random.default_rng([seed, epoch]).permutation(train_idx)
        return make_batch(perm[k * bs : (k + 1) * bs])

    scores: list[dict[str, float]] = []

    def callback(step: int, record: dict[str, float]) -> None:
        if step % per_epoch == 0:
            model.eval()
            with torch.no_grad():
                scores.append({"epoch": step // per_epoch - 1, **evaluate(model)})
            model.train()
            phase(
                f"{desc}: epoch {len(scores)}/{epochs}, loss {record['loss']:.4f}", announce=False
            )

    fit(
        model, loss_fn, batch_fn, adam_config(epochs * per_epoch, lr, weight_decay),
        callback=callback, desc=desc, show_progress=False, device=device,
    )  # fmt: skip
    return scores
