"""The Mesa layer in flax.nnx, parameter for parameter the torch `MesaLayer`.

`load_torch_state_dict` copies a torch layer's ``state_dict`` (as numpy arrays or tensors)
into it, so both frameworks compute the same function.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from mesa_layer.flax.ops import mesa_chunk


def _rms_norm(x: jax.Array, weight: jax.Array, eps: float) -> jax.Array:
    return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + eps) * weight


def _l2norm(x: jax.Array, eps: float = 1e-12) -> jax.Array:
    return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), eps)  # = F.normalize


def _short_conv(x: jax.Array, weight: jax.Array) -> jax.Array:
    """Depthwise causal conv over time, ``x`` ``(B, T, D)``, ``weight`` ``(D, 1, W)``, then SiLU."""
    W = weight.shape[-1]
    xp = jnp.pad(x, [(0, 0), (W - 1, 0), (0, 0)])
    T = x.shape[1]
    y = sum(xp[:, i : i + T] * weight[:, 0, i] for i in range(W))
    return jax.nn.silu(y)


class MesaLayer(nnx.Module):
    """``(B, T, hidden) -> (B, T, hidden)``; arguments as in `mesa_layer.torch.MesaLayer`."""

    def __init__(
        self,
        hidden_size: int,
        num_heads: int = 4,
        head_dim: int | None = None,
        conv_size: int = 4,
        use_output_gate: bool = False,
        lambda_lower_bound: float = 0.25,
        lambda_init: float = 1.0,
        max_cg_steps: int = 30,
        chunk_size: int = 64,
        norm_eps: float = 1e-6,
        param_dtype: Any = jnp.float32,
        *,
        rngs: nnx.Rngs,
    ) -> None:
        if not lambda_lower_bound > 0:
            raise ValueError(f"lambda_lower_bound: expected > 0, got {lambda_lower_bound}")
        head_dim = head_dim or hidden_size // num_heads
        self.hidden_size, self.num_heads, self.head_dim = hidden_size, num_heads, head_dim
        self.key_dim = num_heads * head_dim
        self.lambda_lower_bound, self.max_cg_steps = lambda_lower_bound, max_cg_steps
        self.chunk_size, self.norm_eps = chunk_size, norm_eps
        kw = {"param_dtype": param_dtype, "dtype": param_dtype, "rngs": rngs}
        self.q_proj = nnx.Linear(hidden_size, self.key_dim, use_bias=False, **kw)
        self.k_proj = nnx.Linear(hidden_size, self.key_dim, use_bias=False, **kw)
        self.v_proj = nnx.Linear(hidden_size, self.key_dim, use_bias=False, **kw)
        self.a_proj = nnx.Linear(hidden_size, num_heads, use_bias=True, **kw)
        self.b_proj = nnx.Linear(hidden_size, num_heads, use_bias=True, **kw)
        bound = 1.0 / math.sqrt(conv_size)
        key_q, key_k = jax.random.split(rngs.params())
        shape = (self.key_dim, 1, conv_size)
        self.q_conv = nnx.Param(jax.random.uniform(key_q, shape, param_dtype, -bound, bound))
        self.k_conv = nnx.Param(jax.random.uniform(key_k, shape, param_dtype, -bound, bound))
        theta0 = math.log(math.expm1(lambda_init - lambda_lower_bound))
        self.lambda_params = nnx.Param(jnp.full((self.key_dim,), theta0, param_dtype))
        self.o_norm_weight = nnx.Param(jnp.ones((head_dim,), param_dtype))
        self.g_proj = (
            nnx.Linear(hidden_size, self.key_dim, use_bias=False, **kw) if use_output_gate else None
        )
        self.o_proj = nnx.Linear(self.key_dim, hidden_size, use_bias=False, **kw)

    @property
    def Lambda(self) -> jax.Array:
        lam = jax.nn.softplus(self.lambda_params[...]) + self.lambda_lower_bound
        return lam.reshape(self.num_heads, self.head_dim)

    def __call__(self, x: jax.Array, cg_steps: int | None = None) -> jax.Array:
        if x.ndim != 3 or x.shape[-1] != self.hidden_size:
            raise ValueError(f"x: expected shape (batch, time, {self.hidden_size}), got {x.shape}")
        B, T, _ = x.shape
        shape = (B, T, self.num_heads, self.head_dim)
        q = _l2norm(_short_conv(self.q_proj(x), self.q_conv[...]).reshape(shape))
        k = _l2norm(_short_conv(self.k_proj(x), self.k_conv[...]).reshape(shape))
        v = self.v_proj(x).reshape(shape)
        g = jax.nn.log_sigmoid(self.a_proj(x))
        beta = jax.nn.sigmoid(self.b_proj(x))
        steps = self.max_cg_steps if cg_steps is None else cg_steps
        o, _ = mesa_chunk(
            q, k, v, g, beta, self.Lambda, chunk_size=self.chunk_size, max_cg_steps=steps
        )
        o = _rms_norm(o, self.o_norm_weight[...], self.norm_eps)
        if self.g_proj is not None:
            o = o * jax.nn.silu(self.g_proj(x).reshape(o.shape))
        return self.o_proj(o.reshape(B, T, self.key_dim))


def load_torch_state_dict(layer: MesaLayer, state_dict: dict[str, Any]) -> MesaLayer:
    """Copy a torch `MesaLayer`'s ``state_dict()`` into `layer` in place (and return it).

    ``nn.Linear`` weights ``(out, in)`` become nnx kernels ``(in, out)``.
    """

    def arr(name: str) -> jax.Array:
        if name not in state_dict:
            raise KeyError(f"state_dict: missing entry {name!r}")
        t = state_dict[name]
        t = t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)
        return jnp.asarray(t, dtype=layer.lambda_params[...].dtype)

    linears = ["q_proj", "k_proj", "v_proj", "a_proj", "b_proj", "o_proj"]
    if layer.g_proj is not None:
        linears.append("g_proj")
    for name in linears:
        lin = getattr(layer, name)
        w = arr(f"{name}.weight").T
        if w.shape != lin.kernel[...].shape:
            raise ValueError(
                f"state_dict: {name}.weight has shape {w.T.shape}, expected {lin.kernel[...].T.shape}"
            )
        lin.kernel[...] = w
        if lin.bias is not None:
            lin.bias[...] = arr(f"{name}.bias")
    layer.q_conv[...] = arr("q_conv.weight")
    layer.k_conv[...] = arr("k_conv.weight")
    layer.lambda_params[...] = arr("lambda_params")
    layer.o_norm_weight[...] = arr("o_norm_weight")
    return layer
