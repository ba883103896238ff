"""JAX/Flax layer: same outputs and gradients as the torch layer on shared weights (float64)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
nnx = pytest.importorskip("flax.nnx")


from conftest import make_inputs  # noqa: E402


def enable_x64():
    """float64 for this block only (jax >= 0.6: ``jax.enable_x64(True)``)."""
    return jax.enable_x64(True)


from mesa_layer.reference import mesa_exact  # noqa: E402
from mesa_layer.torch import MesaLayer as TorchMesaLayer  # noqa: E402


def test_jax_chunk_op_equals_exact_reference_and_its_gradients():
    from mesa_layer.flax import mesa_chunk

    ins = make_inputs(B=1, T=20, H=2, K=4, V=3)
    w = torch.randn(1, 20, 2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    leaves = [x.clone().requires_grad_(True) for x in ins]
    o_ref, _ = mesa_exact(*leaves)
    g_ref = torch.autograd.grad((o_ref * w).sum(), leaves)
    with enable_x64():
        jins = [jax.numpy.asarray(x.numpy()) for x in ins]
        jw = jax.numpy.asarray(w.numpy())

        def loss(*a):
            o = mesa_chunk(*a, chunk_size=8, max_cg_steps=6)[0]
            return (o * jw).sum(), o

        # one jitted forward + backward: a single compilation
        grads, o = jax.jit(jax.grad(loss, argnums=tuple(range(6)), has_aux=True))(*jins)
        np.testing.assert_allclose(np.asarray(o), o_ref.detach().numpy(), atol=1e-9)
        for a, b in zip(grads, g_ref, strict=True):
            np.testing.assert_allclose(np.asarray(a), b.numpy(), atol=1e-8)


def test_torch_and_flax_layers_agree_on_shared_weights():
    from mesa_layer.flax import MesaLayer, load_torch_state_dict

    torch.manual_seed(0)
    tl = TorchMesaLayer(16, 2, max_cg_steps_train=8, chunk_size=8, use_output_gate=True).double()
    with torch.no_grad():
        tl.a_proj.bias.fill_(1.5)
        tl.lambda_params.add_(torch.linspace(-0.5, 0.5, 16, dtype=torch.float64))
    x = torch.randn(2, 13, 16, dtype=torch.float64, requires_grad=True)
    wy = torch.randn(2, 13, 16, dtype=torch.float64)
    y = tl(x)
    (y * wy).sum().backward()
    with enable_x64():
        fl = MesaLayer(
            16,
            2,
            max_cg_steps=8,
            chunk_size=8,
            use_output_gate=True,
            param_dtype=jax.numpy.float64,
            rngs=nnx.Rngs(0),
        )
        load_torch_state_dict(fl, tl.state_dict())
        jx = jax.numpy.asarray(x.detach().numpy())

        def loss(model, xin):
            out = model(xin)
            return (out * jax.numpy.asarray(wy.numpy())).sum(), out

        (g_model, g_x), y_flax = nnx.jit(nnx.grad(loss, argnums=(0, 1), has_aux=True))(fl, jx)
        np.testing.assert_allclose(np.asarray(y_flax), y.detach().numpy(), atol=1e-10)
        np.testing.assert_allclose(np.asarray(g_x), x.grad.numpy(), atol=1e-9)
        np.testing.assert_allclose(
            np.asarray(g_model.lambda_params[...]), tl.lambda_params.grad.numpy(), atol=1e-9
        )
        np.testing.assert_allclose(
            np.asarray(g_model.q_proj.kernel[...]), tl.q_proj.weight.grad.numpy().T, atol=1e-9
        )
        np.testing.assert_allclose(
            np.asarray(g_model.a_proj.bias[...]), tl.a_proj.bias.grad.numpy(), atol=1e-9
        )


def test_flax_bad_input_and_missing_weights():
    from mesa_layer.flax import MesaLayer, load_torch_state_dict

    fl = MesaLayer(8, 2, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="x: expected shape"):
        fl(jax.numpy.zeros((1, 4, 7)))
    with pytest.raises(KeyError, match="q_proj.weight"):
        load_torch_state_dict(fl, {})
    with pytest.raises(ValueError, match="lambda_lower_bound"):
        MesaLayer(8, 2, lambda_lower_bound=-1.0, rngs=nnx.Rngs(0))
