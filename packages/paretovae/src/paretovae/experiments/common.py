"""What every experiment shares: the optimiser settings, the labels, and training one family
on one data tensor through `shared_core.train.fit` (same MLP, same budget for all five)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from paretovae.model import FAMILIES, HeavyTailVAE, VAEConfig
from shared_core.train import TrainConfig, fit, step_generator

LABELS = {
    "vae": "VAE (Gaussian)",
    "laplace": "LaplaceVAE",
    "t3vae": "t3VAE",
    "pareto-t": "ParetoVAE (t decoder)",
    "pareto-sympareto": "ParetoVAE (symPareto decoder)",
}


def train_config(steps: int, lr: float = 2e-3, warmup: int = 20, **kw: Any) -> TrainConfig:
    """AdamW at lr 2e-3, 20 warm-up steps then cosine to 0, weight decay 1e-4 (t3VAE's),
    clipping at 1.0: the same for every family."""
    kw = {"weight_decay": 1e-4, "betas": (0.9, 0.999), "grad_clip": 1.0, **kw}
    return TrainConfig(steps=steps, lr=lr, warmup=min(warmup, steps - 1), schedule="cosine", **kw)


@dataclass
class Budget:
    """Training budget shared by the five families of one experiment."""

    families: tuple[str, ...] = FAMILIES
    seeds: int = 3  # independent trainings per family (seed, seed + 1, ...)
    batch_size: int = 128
    train: TrainConfig = field(default_factory=lambda: train_config(300))

    def __post_init__(self) -> None:
        bad = [f for f in self.families if f not in FAMILIES]
        if bad or not self.families:
            raise ValueError(
                f"families: expected a non-empty subset of {FAMILIES}, got {self.families}"
            )
        if self.seeds < 1 or self.batch_size < 1:
            raise ValueError(
                f"seeds, batch_size: expected >= 1, got {self.seeds}, {self.batch_size}"
            )


def train_family(
    family: str,
    vae: VAEConfig,
    x_train: torch.Tensor,
    budget: Budget,
    seed: int,
    corrupt: Callable[[torch.Tensor, torch.Generator], torch.Tensor] | None = None,
    device: str = "cpu",
) -> HeavyTailVAE:
    """Fit ``HeavyTailVAE(replace(vae, family=family))`` on random mini-batches of `x_train`.

    Batch ``step`` is rows drawn with `step_generator(seed, step)` (a pure function of the
    step, as `fit` asks), optionally passed through ``corrupt(batch, generator)`` (fresh
    salt-and-pepper noise per step for the denoising task).
    """
    torch.manual_seed(seed)  # initial weights and the encoders' reparameterisation noise
    model = HeavyTailVAE(replace(vae, family=family))

    def batch_fn(step: int) -> torch.Tensor:
        g = step_generator(seed, step)
        idx = torch.randint(0, len(x_train), (budget.batch_size,), generator=g)
        batch = x_train[idx]
        return corrupt(batch, g) if corrupt is not None else batch

    def loss_fn(m: torch.nn.Module, batch: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        inner = m.module if hasattr(m, "module") else m
        assert isinstance(inner, HeavyTailVAE)
        return inner.loss(batch)

    fit(
        model,
        loss_fn,
        batch_fn,
        budget.train,
        desc=f"{family} seed {seed}",
        show_progress=False,
        device=device,
    )
    return model.cpu()
