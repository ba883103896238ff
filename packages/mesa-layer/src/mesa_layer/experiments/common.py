"""Pieces the experiments share: model configs per mixer and the inference-time CG sweep."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from mesa_layer.torch.model import MesaNetConfig

METHODS = ("mesa", "gla", "deltanet", "attention")
LABELS = {"mesa": "MesaNet", "gla": "GLA", "deltanet": "DeltaNet", "attention": "Softmax attn"}


def model_config(mixer: str, **kw) -> MesaNetConfig:
    """The same width, depth and MLP for every mixer; only the sequence mixer changes."""
    return MesaNetConfig(mixer=mixer, **kw)


@torch.no_grad()
def cg_sweep(
    evaluate: Callable[[int | None], float], steps: Sequence[int]
) -> list[tuple[int, float]]:
    """``evaluate(cg_steps)`` for each number of inference-time CG steps (test-time compute)."""
    return [(s, float(evaluate(s))) for s in steps]
