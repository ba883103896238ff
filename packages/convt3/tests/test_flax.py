"""The JAX/Flax layer: against the float64 reference, and equal to the torch twin on shared weights."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
nnx = pytest.importorskip("flax.nnx")
jnp = jax.numpy

from convt3.flax import (  # noqa: E402
    ConvT3SSM,
    FramePredictor,
    load_torch_state_dict,
    parallel_scan,
    sequential_scan,
)
from convt3.params import reference_arguments  # noqa: E402
from convt3.reference import convs5_sequential, convt3_sequential  # noqa: E402

from shared_core.testing import assert_close  # noqa: E402


def random_layer(U, S, disc, seed, dtype, **kw):
    layer = ConvT3SSM(U, S, discretization=disc, param_dtype=dtype, rngs=nnx.Rngs(seed), **kw)
    rng = np.random.default_rng(seed)
    if layer.corner_logits is not None:
        layer.corner_logits[...] = jnp.asarray(2 * rng.standard_normal((layer.P, 4)), dtype)
    layer.log_step[...] = jnp.asarray(rng.uniform(-3, 0, layer.P), dtype)
    return layer


@nnx.jit
def apply(m, x):
    """One compiled forward (op-by-op JAX compiles every primitive: far slower in tests)."""
    return m(x)


def params_of(layer):
    names = ["Lambda_re", "Lambda_im", "log_step", "B", "C"]
    if layer.corner_logits is not None:
        names.append("corner_logits")
    return {n: np.asarray(getattr(layer, n)[...], np.float64) for n in names}


@pytest.mark.parametrize(
    "disc,parallel,N,T,U,S,H,W,alpha",
    [
        ("zoh", True, 2, 9, 3, 8, 5, 6, (1.0, 1.0)),
        ("direct", True, 1, 12, 2, 6, 4, 3, (0.6, 1.4)),
        ("zoh", False, 1, 12, 2, 6, 4, 3, (0.6, 1.4)),
    ],
)
def test_scan_equals_the_explicit_recurrence_in_float64(disc, parallel, N, T, U, S, H, W, alpha):
    with jax.enable_x64(True):
        layer = random_layer(U, S, disc, T, jnp.float64, alpha_h=alpha[0], alpha_w=alpha[1])
        layer.parallel = parallel
        rng = np.random.default_rng(0)
        u = rng.standard_normal((N, T, U, H, W))
        y, z = apply(layer, jnp.asarray(u))
        y_ref, x_ref = convt3_sequential(
            u, **reference_arguments(params_of(layer), "softplus", disc), alpha_h=alpha[0],
            alpha_w=alpha[1], discretization=disc,
        )  # fmt: skip
        assert_close(f"y ({disc}, parallel={parallel})", y_ref, np.asarray(y), 1e-10)
        x = np.asarray(layer.from_eigenbasis(z))
        assert_close(
            "last state", np.stack([x_ref.real, x_ref.imag]), np.stack([x.real, x.imag]), 1e-10
        )


def test_float32_layer_under_jit_is_close_to_the_reference():
    layer = random_layer(2, 8, "zoh", 1, jnp.float32)
    u = np.random.default_rng(1).standard_normal((2, 10, 2, 6, 6))

    # float32 arithmetic: on a GPU, JAX's default matmul/conv precision is TF32 (4.7e-4 here)
    with jax.default_matmul_precision("float32"):
        y = apply(layer, jnp.asarray(u, jnp.float32))[0]
    y_ref, _ = convt3_sequential(u, **reference_arguments(params_of(layer), "softplus", "zoh"))
    assert_close("y float32 (jit)", y_ref, np.asarray(y), 1e-5)


def test_convs5_mode_equals_the_convs5_recurrence_and_initial_states_carry_over():
    with jax.enable_x64(True):
        layer = random_layer(2, 8, "zoh", 3, jnp.float64, state_kernel="1x1", lambda_param="clip")
        u = np.random.default_rng(2).standard_normal((1, 8, 2, 4, 5))
        p = reference_arguments(params_of(layer), "clip", "zoh")
        y_ref, _ = convs5_sequential(u, p["Lambda"], p["step"], p["B"], p["C"])
        y, _ = apply(layer, jnp.asarray(u))
        np.testing.assert_allclose(np.asarray(y), y_ref, atol=1e-12)
        y1, z1 = apply(layer, jnp.asarray(u[:, :3]))
        y2, _ = nnx.jit(lambda m, x, z: m(x, z))(layer, jnp.asarray(u[:, 3:]), z1)
        np.testing.assert_allclose(np.concatenate([y1, y2], 1), y_ref, atol=1e-12)


def test_associative_scan_equals_lax_scan():
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        a = jnp.asarray(0.9 * rng.random((3, 4)) * np.exp(1j * rng.standard_normal((3, 4))))
        b = jnp.asarray(
            rng.standard_normal((2, 37, 3, 4)) + 1j * rng.standard_normal((2, 37, 3, 4))
        )
        both = jax.jit(lambda a, b: (parallel_scan(a, b), sequential_scan(a, b)))(a, b)
        np.testing.assert_allclose(both[0], both[1], atol=1e-12)


@pytest.mark.parametrize("kernel_bc,model", [(3, "convt3"), (1, "convt3"), (1, "minit3")])
def test_jax_equals_torch_on_shared_parameters(kernel_bc, model):
    """The whole predictor (encoder, block, decoder) in outputs and gradients; ConvS5 mode is the
    same code path with the spatial spectrum off (tested against its reference above)."""
    torch = pytest.importorskip("torch")
    from convt3.torch import FramePredictor as TorchPredictor
    from convt3.torch import PredictorConfig

    torch.manual_seed(0)
    tp = TorchPredictor(
        PredictorConfig(
            model=model,
            in_channels=2,
            d_model=4,
            state_size=8,
            n_layers=1,
            groups=2,
            kernel_bc=kernel_bc,
        )
    ).double()
    with torch.no_grad():
        for name, p in tp.named_parameters():
            if "corner_logits" in name:
                p.copy_(torch.randn_like(p))
    frames = np.random.default_rng(0).standard_normal((2, 6, 2, 5, 5))
    ft = torch.tensor(frames, requires_grad=True)
    out_t = tp(ft)
    weight = np.random.default_rng(1).standard_normal(out_t.shape)
    (out_t * torch.tensor(weight)).sum().backward()
    with jax.enable_x64(True):
        jp = FramePredictor(
            model,
            2,
            1,
            4,
            8,
            1,
            groups=2,
            param_dtype=jnp.float64,
            kernel_bc=kernel_bc,
            rngs=nnx.Rngs(1),
        )
        load_torch_state_dict(jp, tp.state_dict())

        @nnx.jit
        def forward_and_grads(m, x):
            def loss(m, x):
                out = m(x)
                return (out * jnp.asarray(weight)).sum(), out

            return nnx.grad(loss, argnums=(0, 1), has_aux=True)(m, x)

        (grads, grad_x), out_j = forward_and_grads(jp, jnp.asarray(frames))
        np.testing.assert_allclose(np.asarray(out_j), out_t.detach().numpy(), atol=1e-12)
        np.testing.assert_allclose(np.asarray(grad_x), ft.grad.numpy(), atol=1e-10)
        ssm_t, ssm_j = tp.layers[0].ssm, grads.layers[0].ssm
        names = ["Lambda_re", "log_step", "B", "C"] + (
            ["corner_logits"] if model != "convs5" else []
        )
        for name in names:
            np.testing.assert_allclose(
                np.asarray(getattr(ssm_j, name)[...]), getattr(ssm_t, name).grad.numpy(), atol=1e-10
            )


def test_bad_input_raises_clearly():
    layer = ConvT3SSM(2, 4, rngs=nnx.Rngs(0))
    with pytest.raises(
        ValueError, match=r"u: expected shape \(batch, time, features, height, width\)"
    ):
        layer(jnp.zeros((2, 3, 4, 4)))
    with pytest.raises(ValueError, match="expected 2 features on axis 2"):
        layer(jnp.zeros((1, 3, 3, 4, 4)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        layer(jnp.full((1, 3, 2, 4, 4), jnp.nan))
    with pytest.raises(ValueError, match="state: expected shape"):
        layer(jnp.zeros((1, 3, 2, 4, 4)), jnp.zeros((1, 2, 4, 5), jnp.complex64))
    with pytest.raises(ValueError, match="condition number"):
        ConvT3SSM(2, 4, alpha_h=4.0, rngs=nnx.Rngs(0))(jnp.zeros((1, 2, 2, 40, 4)))
    with pytest.raises(ValueError, match="discretization: expected one of"):
        ConvT3SSM(2, 4, discretization="euler", rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="model: expected one of"):
        FramePredictor("convlstm", rngs=nnx.Rngs(0))
    with pytest.raises(KeyError, match="no counterpart"):
        load_torch_state_dict(layer, {"nope": np.zeros(3)})
    with pytest.raises(ValueError, match="has shape"):
        load_torch_state_dict(layer, {"log_step": np.zeros(5)})
