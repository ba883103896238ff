"""JAX / Flax (nnx) implementation of the Mesa layer."""
