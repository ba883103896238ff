"""Shared training and evaluation for the experiments: one loop (`shared_core.train.fit`) for every arm."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import torch
from scipy import stats

from convt3.torch import FramePredictor, PredictorConfig, convlstm_hidden_for, count_parameters
from shared_core.train import TrainConfig, fit, step_generator

LABELS = {
    "convt3": "ConvT3 (3x3, ZOH)",
    "convt3_direct": "ConvT3 (3x3, direct)",
    "convs5": "ConvS5 (1x1 state)",
    "convt3_bc1": "ConvT3, 1x1 B/C",
    "convs5_bc1": "ConvS5, 1x1 B/C",
    "minit3": "MiniT3 (3x3 shared, ZOH)",
    "minit3_bc1": "MiniT3, 1x1 B/C",
    "convlstm": "ConvLSTM",
}
ARMS = {  # arm -> (FramePredictor model, discretization, size of the B and C kernels)
    "convt3": ("convt3", "zoh", 3),
    "convt3_direct": ("convt3", "direct", 3),
    "convs5": ("convs5", "zoh", 3),
    "convt3_bc1": ("convt3", "zoh", 1),
    "convs5_bc1": ("convs5", "zoh", 1),
    "minit3": ("minit3", "zoh", 3),
    "minit3_bc1": ("minit3", "zoh", 1),
    "convlstm": ("convlstm", "zoh", 3),
}


def build_models(
    base: PredictorConfig, arms: tuple[str, ...], seed: int
) -> dict[str, FramePredictor]:
    """One `FramePredictor` per arm; the ConvLSTM's hidden size matches ConvT3's (3x3 B/C) count."""
    target = count_parameters(FramePredictor(replace(base, model="convt3")))
    out = {}
    for arm in arms:
        if arm not in ARMS:
            raise ValueError(f"models: expected arms among {tuple(ARMS)}, got {arm!r}")
        m, disc, k_bc = ARMS[arm]
        cfg = replace(base, model=m, discretization=disc, kernel_bc=k_bc)
        if m == "convlstm":
            cfg = replace(cfg, state_size=convlstm_hidden_for(target, base))
        torch.manual_seed(seed)
        out[arm] = FramePredictor(cfg)
    return out


def train_next_frame(
    model: FramePredictor,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    steps: int,
    batch: int,
    lr: float,
    seed: int,
    desc: str,
) -> list[float]:
    """Teacher-forced next-frame regression: ``model(inputs[i])`` against ``targets[i]`` (MSE).

    Batches are drawn from the rows of `inputs` by `step_generator(seed, step)`.
    """
    n = inputs.shape[0]

    def batch_fn(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        idx = torch.randint(0, n, (batch,), generator=step_generator(seed, step))
        return inputs[idx], targets[idx]

    def loss_fn(m: Any, b: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return torch.mean((m(b[0]) - b[1]) ** 2)

    config = TrainConfig(
        steps=steps, lr=lr, warmup=max(1, steps // 10), weight_decay=1e-5, betas=(0.9, 0.99)
    )  # ConvS5's Moving-MNIST weight decay; beta2 0.99 for short runs
    result = fit(model, loss_fn, batch_fn, config, desc=desc, show_progress=False, device="cpu")
    return result.losses


def valid_horizon(errors: np.ndarray, threshold: float) -> int:
    """Steps predicted before the error ``errors`` ``(time,)`` first exceeds `threshold` (all: length)."""
    above = np.flatnonzero(np.asarray(errors) > threshold)
    return int(above[0]) if above.size else int(np.asarray(errors).shape[0])


def paired_interval(
    a: list[float], b: list[float], level: float = 0.95
) -> tuple[float, float, float]:
    """Mean of the per-seed differences ``a - b`` and its Student-t interval ``(mean, low, high)``.

    The seeds pair the arms (same data, batches and initialisation seed); with one seed the
    interval is ``(nan, nan)``.
    """
    d = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    mean = float(d.mean())
    if d.size < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf((1 + level) / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
    return mean, mean - half, mean + half


def per_horizon(errors: np.ndarray, horizons: tuple[int, ...]) -> dict[int, float]:
    """``errors`` ``(time,)`` where entry k is the error of frame k + 1 -> value at each horizon."""
    return {h: float(errors[h - 1]) for h in horizons if h <= errors.shape[0]}
