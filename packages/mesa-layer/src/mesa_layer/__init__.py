"""MesaNet's Mesa layer: optimal in-context ridge regression per token, solved by conjugate gradient.

The main PyTorch API is importable from here (``mesa_layer.MesaLayer``, ``mesa_layer.mesa_chunk``,
...); it is loaded on first use, so ``import mesa_layer`` itself needs neither torch nor JAX.
The whole torch API is `mesa_layer.torch`, the JAX/Flax one `mesa_layer.flax`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesa_layer.reference import mesa_exact
    from mesa_layer.torch import (
        CGResult,
        DeltaNetLayer,
        GatedLinearAttentionLayer,
        MesaCache,
        MesaLayer,
        MesaNetBackbone,
        MesaNetBlock,
        MesaNetConfig,
        MesaNetLM,
        SoftmaxAttention,
        conjugate_gradient,
        mesa_chunk,
        mesa_recurrent,
        mesa_step,
    )

__all__ = [
    "CGResult",
    "DeltaNetLayer",
    "GatedLinearAttentionLayer",
    "MesaCache",
    "MesaLayer",
    "MesaNetBackbone",
    "MesaNetBlock",
    "MesaNetConfig",
    "MesaNetLM",
    "SoftmaxAttention",
    "__version__",
    "conjugate_gradient",
    "mesa_chunk",
    "mesa_exact",
    "mesa_recurrent",
    "mesa_step",
]
_TORCH_API = frozenset(__all__) - {"__version__", "mesa_exact"}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        return version("mesa-layer")
    if name == "mesa_exact":
        return importlib.import_module("mesa_layer.reference").mesa_exact
    if name in _TORCH_API:
        try:
            module = importlib.import_module("mesa_layer.torch")
        except ModuleNotFoundError as e:
            if e.name != "torch":
                raise
            raise ModuleNotFoundError(
                f"mesa_layer.{name} needs PyTorch: in the workspace `uv sync --package mesa-layer "
                "--extra torch`; with pip `pip install 'mesa-layer[torch]'`",
                name="torch",
            ) from None
        return getattr(module, name)
    raise AttributeError(f"module 'mesa_layer' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
