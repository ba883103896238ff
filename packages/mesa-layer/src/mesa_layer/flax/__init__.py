"""JAX / Flax (nnx) implementation of the Mesa layer, weight-compatible with the torch one."""

from mesa_layer.flax.layer import MesaLayer, load_torch_state_dict
from mesa_layer.flax.ops import conjugate_gradient, mesa_chunk, mesa_solve

__all__ = ["MesaLayer", "conjugate_gradient", "load_torch_state_dict", "mesa_chunk", "mesa_solve"]
