"""PyTorch implementation of the Mesa layer (MesaNet): ops, layer, model and baselines."""

from mesa_layer.torch.baselines import (
    DeltaNetLayer,
    GatedLinearAttentionLayer,
    SoftmaxAttention,
    delta_rule,
    gated_linear_attention,
)
from mesa_layer.torch.cg import CGResult, conjugate_gradient
from mesa_layer.torch.chunk import MesaSolve, mesa_chunk
from mesa_layer.torch.layer import MesaCache, MesaLayer, ShortConvolution
from mesa_layer.torch.model import (
    MesaNetBackbone,
    MesaNetBlock,
    MesaNetConfig,
    MesaNetLM,
    SwiGLU,
)
from mesa_layer.torch.recurrent import mesa_recurrent, mesa_step

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
    "MesaSolve",
    "ShortConvolution",
    "SoftmaxAttention",
    "SwiGLU",
    "conjugate_gradient",
    "delta_rule",
    "gated_linear_attention",
    "mesa_chunk",
    "mesa_recurrent",
    "mesa_step",
]
