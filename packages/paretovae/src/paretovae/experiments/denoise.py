"""Robust denoising: sklearn digits under salt-and-pepper noise (the paper: MNIST, p = 0.5).

Every family trains on noisy images only (fresh noise each step) and reconstructs noisy
held-out images; PSNR and SSIM are against the clean images. With half of the pixels
replaced by 0 or 1, the per-pixel median of the noisy value is still the clean value while
its mean is ``0.5 x + 0.25``: an l1 (Laplace / symPareto) decoder can undo the noise, a
squared-error one cannot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from paretovae.data import noisy_digits, salt_and_pepper
from paretovae.experiments.common import Budget, train_family
from paretovae.metrics import psnr_ssim
from paretovae.model import VAEConfig
from shared_core.data import split_indices


@dataclass
class DenoiseConfig:
    noise: float = 0.5  # salt-and-pepper probability p
    strip: int = 8  # test images shown in the denoising strip
    vae: VAEConfig = field(
        default_factory=lambda: VAEConfig(n=64, m=8, hidden=64, nu=5.0, recon_sigma=0.1)
    )
    budget: Budget = field(default_factory=Budget)


def run(cfg: DenoiseConfig, seed: int = 0, device: str = "cpu") -> dict[str, Any]:
    x, _ = noisy_digits()
    train_idx, test_idx = split_indices(len(x), (0.8, 0.2), seed=0)
    x_train, x_test = x[train_idx], x[test_idx]
    noisy_test = salt_and_pepper(x_test, cfg.noise, torch.Generator().manual_seed(12345))

    def corrupt(batch: torch.Tensor, g: torch.Generator) -> torch.Tensor:
        return salt_and_pepper(batch, cfg.noise, g)

    out: dict[str, Any] = {
        "metrics": {},
        "noisy_input": psnr_ssim(x_test, noisy_test),
        "strip": {"clean": x_test[: cfg.strip], "noisy": noisy_test[: cfg.strip]},
    }
    for family in cfg.budget.families:
        rows = []
        for k in range(cfg.budget.seeds):
            model = train_family(
                family, cfg.vae, x_train, cfg.budget, seed + k, corrupt=corrupt, device=device
            )
            restored = model.reconstruct(noisy_test)
            rows.append(psnr_ssim(x_test, restored))
            if k == 0:
                out["strip"][family] = restored[: cfg.strip].clamp(0, 1)
        out["metrics"][family] = rows
    return out
