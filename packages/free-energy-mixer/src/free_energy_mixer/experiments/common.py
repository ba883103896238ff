"""Pieces both experiments share: the optimiser settings, labels and a parameter count."""

from __future__ import annotations

from typing import Any

import torch

from shared_core.train import TrainConfig

LABELS = {
    "softmax": "Softmax attn",
    "fem-softmax": "FEM-softmax",
    "linear": "Linear attn",
    "fem-linear": "FEM-linear",
    "gla": "GLA",
    "fem-gla": "FEM-GLA",
}


def train_config(steps: int, lr: float = 3e-3, warmup: int = 20, **kw: Any) -> TrainConfig:
    """AdamW at lr 3e-3 with 20 warm-up steps then cosine to 0, weight decay 0.1 on matrices,
    betas (0.9, 0.95), clipping at 1.0: the same for every mixer."""
    kw = {"weight_decay": 0.1, "betas": (0.9, 0.95), "grad_clip": 1.0, **kw}
    return TrainConfig(steps=steps, lr=lr, warmup=min(warmup, steps - 1), schedule="cosine", **kw)


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
