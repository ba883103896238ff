"""Pieces the experiments share: model configs per mixer and the inference-time CG sweep."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from mesa_layer.torch.model import MesaNetConfig

METHODS = ("mesa", "gla", "deltanet", "attention")
LABELS = {"mesa": "MesaNet", "gla": "GLA", "deltanet": "DeltaNet", "attention": "Softmax attn"}


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
    """Next-token cross-entropy of a `MesaNetLM` on ``(inputs, labels)``."""
    return model(batch[0], batch[1])[1]


@torch.no_grad()
def cg_sweep(
    evaluate: Callable[[int | None], float], steps: Sequence[int]
) -> list[tuple[int, float]]:
    """``evaluate(cg_steps)`` for each number of inference-time CG steps (test-time compute)."""
    return [(s, float(evaluate(s))) for s in steps]
