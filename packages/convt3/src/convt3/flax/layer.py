"""ConvT3 in JAX/Flax (nnx): the primary API, parameter for parameter the torch twin.

Layout is channels-first like the torch twin, ``(batch, time, channels, height, width)``,
so one ``state_dict`` fits both (`load_torch_state_dict`). The maths is the one documented
in `convt3.torch.layer`: continuous eigenvalues ``mu = Lambda_p eps_p(theta_m, phi_n)``, ZOH,
the input convolution moved to the sine eigenbasis, a diagonal recurrence solved by
``jax.lax.associative_scan`` (O(T) work, O(log T) depth), back to pixels, output convolution.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from convt3._checks import (
    check_choice,
    check_int,
    check_layer_config,
    check_sequence_shape,
    check_state_shape,
)
from convt3.params import init_ssm_params
from convt3.spectral import sine_basis

MODELS = ("convt3", "minit3", "convs5")
SSM_KINDS = {  # model -> (state_kernel, lambda_param)
    "convt3": ("3x3", "softplus"),
    "minit3": ("3x3_shared", "softplus"),
    "convs5": ("1x1", "clip"),
}


def _binary_op(
    left: tuple[jax.Array, jax.Array], right: tuple[jax.Array, jax.Array]
) -> tuple[jax.Array, jax.Array]:
    """Compose ``z -> a_l z + b_l`` then ``z -> a_r z + b_r`` (the scan's associative operator)."""
    a_l, b_l = left
    a_r, b_r = right
    return a_r * a_l, a_r * b_l + b_r


def parallel_scan(a: jax.Array, b: jax.Array) -> jax.Array:
    """All states of ``z_k = a z_{k-1} + b_k`` (``z_{-1} = 0``), time on axis 1 of `b`."""
    T = b.shape[1]
    a_seq = jnp.broadcast_to(a, (T, *a.shape))[None]  # (1, T, ...), broadcasts over batch
    return jax.lax.associative_scan(_binary_op, (a_seq, b), axis=1)[1]


def sequential_scan(a: jax.Array, b: jax.Array) -> jax.Array:
    """`parallel_scan` by ``jax.lax.scan`` (one step at a time)."""

    def step(z: jax.Array, b_k: jax.Array) -> tuple[jax.Array, jax.Array]:
        z = a * z + b_k
        return z, z

    _, zs = jax.lax.scan(step, jnp.zeros_like(b[:, 0]), jnp.moveaxis(b, 1, 0))
    return jnp.moveaxis(zs, 0, 1)


def conv2d(x: jax.Array, w: jax.Array) -> jax.Array:
    """``x`` ``(N, C_in, H, W)`` (x) ``w`` ``(C_out, C_in, k, k)``, zero SAME padding, cross-correlation."""
    return jax.lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")
    )


def _seed_from(rngs: nnx.Rngs) -> int:
    return int(jax.random.randint(rngs.params(), (), 0, 2**31 - 1))


class ConvT3SSM(nnx.Module):
    """ConvSSM with a 3x3 (ConvT3, MiniT3) or 1x1 (ConvS5) state kernel; arguments as `convt3.torch.ConvT3SSM`.

    ``layer(u, state=None) -> (y, last_state)`` with ``u`` ``(N, T, U, H, W)`` and the
    eigenbasis state ``(N, P, H, W)`` complex.
    """

    def __init__(
        self,
        features: int,
        state_size: int = 16,
        kernel_b: int = 3,
        kernel_c: int = 3,
        blocks: int = 1,
        state_kernel: str = "3x3",
        discretization: str = "zoh",
        lambda_param: str = "softplus",
        alpha_h: float = 1.0,
        alpha_w: float = 1.0,
        dt_min: float = 1e-3,
        dt_max: float = 1e-1,
        parallel: bool = True,
        param_dtype: Any = jnp.float32,
        *,
        rngs: nnx.Rngs,
    ) -> None:
        check_layer_config(
            features, state_size, kernel_b, kernel_c, blocks, state_kernel, discretization,
            lambda_param, alpha_h, alpha_w, dt_min, dt_max,
        )  # fmt: skip
        self.features, self.state_size, self.P = features, state_size, state_size // 2
        self.state_kernel, self.discretization = state_kernel, discretization
        self.lambda_param = lambda_param
        self.alpha_h, self.alpha_w = float(alpha_h), float(alpha_w)
        self.parallel = parallel
        init = init_ssm_params(
            np.random.default_rng(_seed_from(rngs)), features, state_size, kernel_b, kernel_c,
            blocks, dt_min, dt_max, spatial=state_kernel != "1x1", lambda_param=lambda_param,
            shared_spatial=state_kernel == "3x3_shared",
        )  # fmt: skip
        self.Lambda_re = nnx.Param(jnp.asarray(init["Lambda_re"], param_dtype))
        self.Lambda_im = nnx.Param(jnp.asarray(init["Lambda_im"], param_dtype))
        self.log_step = nnx.Param(jnp.asarray(init["log_step"], param_dtype))
        self.B = nnx.Param(jnp.asarray(init["B"], param_dtype))
        self.C = nnx.Param(jnp.asarray(init["C"], param_dtype))
        self.corner_logits = (
            nnx.Param(jnp.asarray(init["corner_logits"], param_dtype))
            if "corner_logits" in init
            else None
        )

    def continuous_lambda(self) -> jax.Array:
        re = self.Lambda_re[...]
        re = -jax.nn.softplus(re) if self.lambda_param == "softplus" else jnp.minimum(re, -1e-4)
        return re + 1j * self.Lambda_im[...]

    def spatial_spectrum(self, H: int, W: int) -> jax.Array | None:
        """``(P, H, W)`` eigenvalues of the spatial kernels (None for 1x1)."""
        if self.corner_logits is None:
            return None
        logits = self.corner_logits[...]
        if self.state_kernel == "3x3_shared":  # MiniT3: [l_1, l_2, l_3, 0] for every channel
            logits = jnp.broadcast_to(jnp.pad(logits, ((0, 0), (0, 1))), (self.P, 4))
        corners = 4 * jax.nn.softmax(logits, -1)
        if self.discretization == "direct":
            corners = corners / corners.max(-1, keepdims=True)
        pp, pm, mp, mm = (corners[:, i, None, None] for i in range(4))
        a, b = (pp + pm + mp + mm) / 4, (pp + pm - mp - mm) / 4
        c, d = (pp - pm + mp - mm) / 4, (pp - pm - mp + mm) / 4
        dtype = corners.dtype
        ch = jnp.cos(jnp.arange(1, H + 1, dtype=dtype) * jnp.pi / (H + 1))[:, None]
        cw = jnp.cos(jnp.arange(1, W + 1, dtype=dtype) * jnp.pi / (W + 1))[None, :]
        return a + b * ch + c * cw + d * ch * cw

    def discretize(self, H: int, W: int) -> tuple[jax.Array, jax.Array]:
        """``(A_bar, B_gain)``, ``(P, H, W)`` complex (``(P, 1, 1)`` for 1x1 kernels)."""
        Lambda = self.continuous_lambda()[:, None, None]
        step = jnp.exp(self.log_step[...])[:, None, None]
        eps = self.spatial_spectrum(H, W)
        if eps is None or self.discretization == "direct":
            lam_bar = jnp.exp(Lambda * step)
            gain = (lam_bar - 1) / Lambda
            return (lam_bar if eps is None else lam_bar * eps), gain
        mu = Lambda * eps
        A_bar = jnp.exp(mu * step)
        return A_bar, (A_bar - 1) / mu

    def _bases(self, H: int, W: int, dtype: Any) -> tuple[jax.Array, ...]:
        Qh, Qh_inv, _ = sine_basis(H, self.alpha_h)
        Qw, Qw_inv, _ = sine_basis(W, self.alpha_w)
        return tuple(jnp.asarray(m, dtype) for m in (Qh, Qh_inv, Qw, Qw_inv))

    def to_eigenbasis(self, x: jax.Array) -> jax.Array:
        """Pixel-space ``(..., P, H, W)`` -> eigenbasis (identity for 1x1 kernels)."""
        if self.corner_logits is None:
            return x
        _, Qh_inv, _, Qw_inv = self._bases(x.shape[-2], x.shape[-1], x.dtype)
        return jnp.einsum("hk,...kl,wl->...hw", Qh_inv, x, Qw_inv)

    def from_eigenbasis(self, z: jax.Array) -> jax.Array:
        """Eigenbasis ``(..., P, H, W)`` -> pixel space (identity for 1x1 kernels)."""
        if self.corner_logits is None:
            return z
        Qh, _, Qw, _ = self._bases(z.shape[-2], z.shape[-1], z.dtype)
        return jnp.einsum("hk,...kl,wl->...hw", Qh, z, Qw)

    def __call__(self, u: jax.Array, state: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
        N, T, U, H, W = check_sequence_shape(
            getattr(u, "shape", ()), self.features, self.alpha_h, self.alpha_w
        )
        if not isinstance(u, jax.core.Tracer) and not bool(jnp.isfinite(u).all()):
            raise ValueError("u: contains NaN or infinite values")
        if state is not None:
            check_state_shape(state.shape, (N, self.P, H, W))
        A_bar, gain = self.discretize(H, W)
        Bw, Cw = self.B[...], self.C[...]
        flat = u.reshape(N * T, U, H, W).astype(Bw.dtype)
        Bu = (conv2d(flat, Bw[..., 0]) + 1j * conv2d(flat, Bw[..., 1])).reshape(N, T, self.P, H, W)
        drive = gain * self.to_eigenbasis(Bu)
        if state is not None:
            drive = drive.at[:, 0].add(A_bar * state)
        z = parallel_scan(A_bar, drive) if self.parallel else sequential_scan(A_bar, drive)
        x = self.from_eigenbasis(z).reshape(N * T, self.P, H, W)
        y = 2 * (conv2d(x.real, Cw[..., 0]) - conv2d(x.imag, Cw[..., 1]))
        return y.reshape(N, T, U, H, W), z[:, -1]

    def step(self, u: jax.Array, state: jax.Array) -> tuple[jax.Array, jax.Array]:
        """One time step: ``u`` ``(N, U, H, W)``, `state` ``(N, P, H, W)``."""
        if getattr(u, "ndim", None) != 4:
            raise ValueError(
                f"u: expected shape (batch, features, height, width), got {getattr(u, 'shape', None)}"
            )
        y, z = self(u[:, None], state)
        return y[:, 0], z


class Conv2d(nnx.Module):
    """A torch-layout convolution: ``weight`` ``(out, in, k, k)`` and ``bias`` ``(out,)``."""

    def __init__(self, c_in: int, c_out: int, k: int, param_dtype: Any, *, rngs: nnx.Rngs) -> None:
        bound = 1 / np.sqrt(c_in * k * k)  # torch's default (kaiming-uniform a=sqrt(5)) range
        self.weight = nnx.Param(
            jax.random.uniform(rngs.params(), (c_out, c_in, k, k), param_dtype, -bound, bound)
        )
        self.bias = nnx.Param(
            jax.random.uniform(rngs.params(), (c_out,), param_dtype, -bound, bound)
        )

    def __call__(self, x: jax.Array) -> jax.Array:
        return conv2d(x, self.weight[...]) + self.bias[...][:, None, None]


class Norm(nnx.Module):
    """Affine parameters ``weight``, ``bias`` of a GroupNorm (torch names)."""

    def __init__(self, features: int, param_dtype: Any) -> None:
        self.weight = nnx.Param(jnp.ones(features, param_dtype))
        self.bias = nnx.Param(jnp.zeros(features, param_dtype))


def group_norm(x: jax.Array, groups: int, weight: jax.Array, bias: jax.Array) -> jax.Array:
    """torch.nn.GroupNorm on ``(N, C, H, W)`` (eps 1e-5)."""
    N, C, H, W = x.shape
    g = x.reshape(N, groups, -1)
    g = (g - g.mean(-1, keepdims=True)) / jnp.sqrt(g.var(-1, keepdims=True) + 1e-5)
    return g.reshape(N, C, H, W) * weight[:, None, None] + bias[:, None, None]


def channel_layer_norm(x: jax.Array, weight: jax.Array, bias: jax.Array) -> jax.Array:
    """LayerNorm over the channel axis of ``(..., C, H, W)`` (eps 1e-5)."""
    mean = x.mean(-3, keepdims=True)
    var = x.var(-3, keepdims=True)
    return (x - mean) / jnp.sqrt(var + 1e-5) * weight[:, None, None] + bias[:, None, None]


class ConvSSMBlock(nnx.Module):
    """The torch `convt3.torch.ConvSSMBlock`: SSM, D conv, GroupNorm, GELU, skip, LayerNorm."""

    def __init__(
        self,
        features: int,
        state_size: int,
        kernel_d: int = 3,
        groups: int = 1,
        param_dtype: Any = jnp.float32,
        *,
        rngs: nnx.Rngs,
        **ssm_kwargs: Any,
    ) -> None:
        check_int("groups", groups)
        if features % groups:
            raise ValueError(f"groups: expected a divisor of features={features}, got {groups}")
        self.groups = groups
        self.ssm = ConvT3SSM(features, state_size, param_dtype=param_dtype, rngs=rngs, **ssm_kwargs)
        self.D = Conv2d(features, features, kernel_d, param_dtype, rngs=rngs)
        self.group_norm = Norm(features, param_dtype)
        self.norm_weight = nnx.Param(jnp.ones(features, param_dtype))
        self.norm_bias = nnx.Param(jnp.zeros(features, param_dtype))

    def __call__(self, u: jax.Array, state: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
        y, last = self.ssm(u, state)
        shape = u.shape
        flat_u = u.reshape(-1, *shape[-3:])
        h = y.reshape(-1, *shape[-3:]) + self.D(flat_u)
        h = group_norm(h, self.groups, self.group_norm.weight[...], self.group_norm.bias[...])
        h = jax.nn.gelu(h, approximate=False)
        out = channel_layer_norm(flat_u + h, self.norm_weight[...], self.norm_bias[...])
        return out.reshape(shape), last


class FramePredictor(nnx.Module):
    """The torch `convt3.torch.FramePredictor` for ``model`` in ``("convt3", "minit3", "convs5")``.

    ``predictor(frames)`` ``(N, T, in_channels, H, W) -> (N, T, out_channels, H, W)``.
    """

    def __init__(
        self,
        model: str = "convt3",
        in_channels: int = 1,
        out_channels: int = 1,
        d_model: int = 8,
        state_size: int = 16,
        n_layers: int = 2,
        discretization: str = "zoh",
        groups: int = 1,
        dt_min: float = 1e-3,
        dt_max: float = 1e-1,
        param_dtype: Any = jnp.float32,
        kernel_bc: int = 3,
        *,
        rngs: nnx.Rngs,
    ) -> None:
        check_choice("model", model, MODELS)
        for name, v in (
            ("in_channels", in_channels),
            ("out_channels", out_channels),
            ("n_layers", n_layers),
        ):
            check_int(name, v)
        self.out_channels = out_channels
        self.encoder = Conv2d(in_channels, d_model, 3, param_dtype, rngs=rngs)
        kernel, lam = SSM_KINDS[model]
        self.layers = nnx.List(
            [
                ConvSSMBlock(
                    d_model,
                    state_size,
                    groups=groups,
                    param_dtype=param_dtype,
                    rngs=rngs,
                    kernel_b=kernel_bc,
                    kernel_c=kernel_bc,
                    state_kernel=kernel,
                    discretization=discretization,
                    lambda_param=lam,
                    dt_min=dt_min,
                    dt_max=dt_max,
                )
                for _ in range(n_layers)
            ]
        )
        self.decoder = Conv2d(d_model, out_channels, 1, param_dtype, rngs=rngs)

    def __call__(self, frames: jax.Array) -> jax.Array:
        if getattr(frames, "ndim", None) != 5:
            raise ValueError(
                f"frames: expected shape (batch, time, channels, height, width), got {getattr(frames, 'shape', None)}"
            )
        N, T, C, H, W = frames.shape
        h = self.encoder(frames.reshape(N * T, C, H, W)).reshape(N, T, -1, H, W)
        for layer in self.layers:
            h, _ = layer(h)
        delta = self.decoder(h.reshape(N * T, -1, H, W)).reshape(N, T, -1, H, W)
        return frames[:, :, : self.out_channels] + delta


def load_torch_state_dict(module: nnx.Module, state_dict: dict[str, Any]) -> nnx.Module:
    """Copy a torch twin's ``state_dict()`` into `module` (same names) in place; return it."""
    for name, value in state_dict.items():
        parts = name.split(".")
        obj: Any = module
        for part in parts[:-1]:
            obj = obj[int(part)] if part.isdigit() else getattr(obj, part, None)
            if obj is None:
                raise KeyError(
                    f"state_dict: {name!r} has no counterpart in {type(module).__name__}"
                )
        param = getattr(obj, parts[-1], None)
        if not isinstance(param, nnx.Param):
            raise KeyError(f"state_dict: {name!r} has no counterpart in {type(module).__name__}")
        arr = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
        if arr.shape != param[...].shape:
            raise ValueError(
                f"state_dict: {name} has shape {arr.shape}, expected {param[...].shape}"
            )
        param[...] = jnp.asarray(arr, param[...].dtype)
    return module
