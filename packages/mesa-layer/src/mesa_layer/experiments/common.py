"""Pieces the experiments share: model configs per mixer, the optimiser defaults, the LM loss
and the inference-time CG sweep."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from mesa_layer.torch.model import MesaNetConfig
from shared_core.train import TrainConfig

METHODS = ("mesa", "gla", "deltanet", "attention")
LABELS = {"mesa": "MesaNet", "gla": "GLA", "deltanet": "DeltaNet", "attention": "Softmax attn"}


def train_config(steps: int, lr: float = 3e-3, warmup: int = 20, **kw: Any) -> TrainConfig:
    """The reproduction's AdamW settings: lr 3e-3, 20 warm-up steps, then cosine to 0,
    weight decay 0.1 on matrices (Lambda exempt), betas (0.9, 0.95), clipping at 1.0."""
    kw = {"weight_decay": 0.1, "betas": (0.9, 0.95), "grad_clip": 1.0, **kw}
    return TrainConfig(steps=steps, lr=lr, warmup=warmup, schedule="cosine", **kw)


def model_config(mixer: str, cfg: Any, **kw: Any) -> MesaNetConfig:
    """The same width, depth, heads, MLP and training CG steps (read from the experiment config
    `cfg`) for every mixer; only the sequence mixer changes. `kw` sets the remaining fields."""
    return MesaNetConfig(
        mixer=mixer,
        hidden_size=cfg.hidden_size,
        num_layers=cfg.num_layers,
        num_heads=cfg.num_heads,
        intermediate_size=cfg.intermediate_size,
        max_cg_steps_train=cfg.cg_steps_train,
        chunk_size=64,
        **kw,
    )


def lm_loss(model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Next-token cross-entropy of a `MesaNetLM` on ``(inputs, labels)`` (model may be DDP)."""
    loss = model(batch[0], batch[1])[1]
    assert loss is not None
    return loss


@torch.no_grad()
def cg_sweep(
    evaluate: Callable[[int | None], float], steps: Sequence[int]
) -> list[tuple[int, float]]:
    """``evaluate(cg_steps)`` for each number of inference-time CG steps (test-time compute)."""
    return [(s, float(evaluate(s))) for s in steps]
