"""MesaNet's Mesa layer: optimal in-context ridge regression per token, solved by conjugate gradient.

The framework code lives in `mesa_layer.torch` (primary) and `mesa_layer.flax` (JAX); this
top-level module imports neither, so ``import mesa_layer`` works without them.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
