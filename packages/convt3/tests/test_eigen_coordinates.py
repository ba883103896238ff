"""The state a user passes and receives is in scaled eigen-coordinates (issue 42's acceptance test).

A pixel-space initial state ``X_0`` ``(N, P, H, W)`` given through ``to_eigenbasis`` must
reproduce, step by step, the trajectory of the explicit loop

    X_k = exp(Lambda Delta) (K_p * X_{k-1}) + (exp(Lambda Delta) - 1) / Lambda (B * U_k)

(``"direct"``: the discrete update is literally a depthwise 3x3 convolution, written here
with ``conv2d`` and independent of `convt3.reference`) and, for ZOH, the matrix exponential
of the explicit 3x3 operator. The same state handed over *without* the transform does not.
"""

from __future__ import annotations

import numpy as np
import pytest
from convt3.params import reference_arguments
from convt3.reference import convt3_sequential
from convt3.spectral import ptt_kernel

from shared_core.testing import assert_close

torch = pytest.importorskip("torch")
F = torch.nn.functional

RATIOS = {torch.float64: 1e-10, torch.float32: 1e-5}
DTYPES = pytest.mark.parametrize("dtype", list(RATIOS), ids=lambda d: str(d).split(".")[-1])
N, T, U, S, H, W = 2, 12, 2, 8, 5, 7


def ri(x):
    """Complex array or tensor -> float64 ``(..., 2)`` (real, imag) for `assert_close`."""
    x = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, np.complex128)
    return np.stack([x.real, x.imag], -1)


def torch_layer(disc, seed=3):
    from convt3.torch import ConvT3SSM

    layer = ConvT3SSM(U, S, discretization=disc, alpha_h=1.3, alpha_w=0.8, seed=seed).double()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        layer.corner_logits.copy_(2 * torch.randn(layer.corner_logits.shape, generator=g))
        layer.log_step.uniform_(-2, 0, generator=g)
    return layer


def explicit_direct_loop(layer, u, x0):
    """The direct ConvT3 recurrence as a loop of depthwise 3x3 ``conv2d`` (float64, complex)."""
    params = {k: v.detach().double().numpy() for k, v in layer.named_parameters()}
    args = reference_arguments(params, layer.lambda_param, "direct")
    K = torch.tensor(ptt_kernel(args["coefficients"], layer.alpha_h, layer.alpha_w))[:, None]
    lam_bar = np.exp(args["Lambda"] * args["step"])
    a = torch.tensor(lam_bar)[None, :, None, None]
    gain = torch.tensor((lam_bar - 1) / args["Lambda"])[None, :, None, None]
    Bw, Cw = torch.tensor(args["B"]), torch.tensor(args["C"])
    u = torch.tensor(u)
    x, xs, ys = torch.tensor(x0), [], []
    P = x.shape[1]
    for k in range(u.shape[1]):
        conv_x = torch.complex(
            F.conv2d(x.real, K, padding=1, groups=P), F.conv2d(x.imag, K, padding=1, groups=P)
        )
        Bu = torch.complex(
            F.conv2d(u[:, k], Bw.real, padding=Bw.shape[-1] // 2),
            F.conv2d(u[:, k], Bw.imag, padding=Bw.shape[-1] // 2),
        )
        x = a * conv_x + gain * Bu
        pc = Cw.shape[-1] // 2
        ys.append(
            2 * (F.conv2d(x.real, Cw.real, padding=pc) - F.conv2d(x.imag, Cw.imag, padding=pc))
        )
        xs.append(x)
    return torch.stack(xs, 1).numpy(), torch.stack(ys, 1).numpy()


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((N, T, U, H, W))
    x0 = rng.standard_normal((N, S // 2, H, W)) + 1j * rng.standard_normal((N, S // 2, H, W))
    return u, x0


@DTYPES
@pytest.mark.parametrize("drive", [False, True], ids=["free", "driven"])
def test_torch_pixel_state_through_to_eigenbasis_follows_the_3x3_conv_loop(device, dtype, drive):
    layer = torch_layer("direct")
    u, x0 = inputs()
    u = u if drive else 0 * u
    xs_ref, ys_ref = explicit_direct_loop(layer, u, x0)
    fast = layer.to(device=device, dtype=dtype)
    cdtype = torch.complex128 if dtype == torch.float64 else torch.complex64
    z = fast.to_eigenbasis(torch.tensor(x0, dtype=cdtype, device=device))
    ut = torch.tensor(u, dtype=dtype, device=device)
    with torch.no_grad():
        y_all, _ = fast(ut, z)  # the parallel scan from the same state
        xs = []
        for k in range(T):  # step by step: the state carried in eigen-coordinates
            _, z = fast.step(ut[:, k], z)
            xs.append(fast.from_eigenbasis(z).cpu())
    assert_close("trajectory X_k", ri(xs_ref), ri(torch.stack(xs, 1)), RATIOS[dtype])
    assert_close("outputs Y_k", ys_ref, y_all.cpu(), RATIOS[dtype])


def test_torch_zoh_pixel_state_follows_the_explicit_operator():
    layer = torch_layer("zoh")
    u, x0 = inputs(1)
    params = {k: v.detach().numpy() for k, v in layer.named_parameters()}
    args = reference_arguments(params, layer.lambda_param, "zoh")
    z = layer.to_eigenbasis(torch.tensor(x0))
    for k in range(T):
        x_ref = convt3_sequential(
            u[:, : k + 1], **args, x0=x0, alpha_h=layer.alpha_h, alpha_w=layer.alpha_w
        )[1]
        with torch.no_grad():
            _, z = layer.step(torch.tensor(u[:, k]), z)
        assert_close(f"X_{k + 1}", ri(x_ref), ri(layer.from_eigenbasis(z)), 1e-10)


def test_a_pixel_state_passed_without_to_eigenbasis_is_a_different_state():
    layer = torch_layer("direct")
    u, x0 = inputs(2)
    xs_ref, _ = explicit_direct_loop(layer, 0 * u, x0)
    with torch.no_grad():
        _, z = layer(torch.zeros(N, 1, U, H, W, dtype=torch.float64), torch.tensor(x0))
    gap = np.abs(layer.from_eigenbasis(z).numpy() - xs_ref[:, 0]).max()
    assert gap > 1e-2 * np.abs(xs_ref[:, 0]).max()


def test_round_trip_and_scaling_of_the_eigen_coordinates():
    layer = torch_layer("zoh")
    _, x0 = inputs(3)
    x = torch.tensor(x0)
    z = layer.to_eigenbasis(x)
    assert_close("round trip", ri(x0), ri(layer.from_eigenbasis(z)), 1e-12)
    # scaled, not orthonormal: the coordinates of a pixel field are not its sine-DFT energy
    assert not np.isclose(torch.linalg.vector_norm(z).item(), torch.linalg.vector_norm(x).item())


@pytest.mark.parametrize("disc", ["direct", "zoh"])
def test_flax_pixel_state_through_to_eigenbasis_follows_the_explicit_loop(disc):
    jax = pytest.importorskip("jax")
    pytest.importorskip("flax")
    from convt3.flax import ConvT3SSM as FlaxSSM
    from convt3.flax import load_torch_state_dict
    from flax import nnx

    layer = torch_layer(disc)
    u, x0 = inputs(4)
    if disc == "direct":
        xs_ref, ys_ref = explicit_direct_loop(layer, u, x0)
    else:
        params = {k: v.detach().numpy() for k, v in layer.named_parameters()}
        args = reference_arguments(params, layer.lambda_param, "zoh")
        ys_ref = convt3_sequential(u, **args, x0=x0, alpha_h=layer.alpha_h, alpha_w=layer.alpha_w)[
            0
        ]
        xs_ref = None
    with jax.enable_x64(True):
        flax_layer = FlaxSSM(
            U, S, discretization=disc, alpha_h=1.3, alpha_w=0.8, param_dtype=jax.numpy.float64,
            rngs=nnx.Rngs(0),
        )  # fmt: skip
        load_torch_state_dict(flax_layer, layer.state_dict())
        z = flax_layer.to_eigenbasis(jax.numpy.asarray(x0))
        y, _ = nnx.jit(lambda m, u, z: m(u, z))(flax_layer, jax.numpy.asarray(u), z)
        assert_close(f"Flax Y_k ({disc})", ys_ref, np.asarray(y), 1e-10)
        if xs_ref is not None:
            xs, step = [], nnx.jit(lambda m, u, z: m.step(u, z))  # one compile, T calls
            for k in range(T):
                _, z = step(flax_layer, jax.numpy.asarray(u[:, k]), z)
                xs.append(np.asarray(flax_layer.from_eigenbasis(z)))
            assert_close("Flax X_k", ri(xs_ref), ri(np.stack(xs, 1)), 1e-10)
