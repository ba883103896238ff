"""The torch layer against the float64 reference recurrences (explicit 3x3 convolutions)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from convt3.params import reference_arguments  # noqa: E402
from convt3.reference import convs5_sequential, convt3_sequential, depthwise_conv3x3  # noqa: E402
from convt3.spectral import ptt_kernel  # noqa: E402
from convt3.torch import ConvT3SSM, parallel_scan, sequential_scan  # noqa: E402

from shared_core.testing import assert_close  # noqa: E402

RATIOS = {torch.float64: 1e-10, torch.float32: 1e-5}
DTYPES = pytest.mark.parametrize("dtype", list(RATIOS), ids=lambda d: str(d).split(".")[-1])


def close(a, b, atol):
    """np.testing on tensors (torch.testing's first call imports for ~20 s)."""
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=0, atol=atol)


def make_layer(features, state_size, disc="zoh", seed=0, alpha=(1.0, 1.0), **kw):
    """A float64 layer with random admissible parameters (random corners, steps, eigenvalues)."""
    layer = ConvT3SSM(
        features, state_size, discretization=disc, alpha_h=alpha[0], alpha_w=alpha[1], seed=seed,
        **kw,
    ).double()  # fmt: skip
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        if layer.state_kernel == "3x3":
            layer.corner_logits.copy_(2 * torch.randn(layer.corner_logits.shape, generator=g))
        layer.log_step.copy_(torch.empty(layer.P, dtype=torch.float64).uniform_(-3, 0, generator=g))
        layer.Lambda_re.add_(torch.randn(layer.P, generator=g, dtype=torch.float64))
    return layer


def params_of(layer):
    return {k: v.detach().cpu().double().numpy() for k, v in layer.named_parameters()}


def run_reference(layer, u, x0=None):
    args = reference_arguments(params_of(layer), layer.lambda_param, layer.discretization)
    return convt3_sequential(
        u, **args, x0=x0, alpha_h=layer.alpha_h, alpha_w=layer.alpha_w,
        discretization=layer.discretization,
    )  # fmt: skip


@DTYPES
@pytest.mark.parametrize("disc", ["zoh", "direct"])
@pytest.mark.parametrize(
    "N,T,U,S,H,W,alpha",
    [
        (2, 9, 3, 8, 5, 6, (1.0, 1.0)),
        (1, 16, 1, 4, 3, 3, (1.0, 1.0)),
        (2, 5, 2, 12, 6, 4, (1.5, 0.7)),
    ],
)
def test_parallel_scan_equals_the_explicit_3x3_recurrence(
    device, dtype, disc, N, T, U, S, H, W, alpha
):
    layer = make_layer(U, S, disc, seed=T, alpha=alpha)
    rng = np.random.default_rng(T)
    u = rng.standard_normal((N, T, U, H, W))
    x0 = rng.standard_normal((N, layer.P, H, W)) + 1j * rng.standard_normal((N, layer.P, H, W))
    y_ref, x_ref = run_reference(layer, u, x0)
    fast = layer.to(device=device, dtype=dtype)
    z0 = fast.to_eigenbasis(
        torch.tensor(x0, device=device).to(
            torch.complex128 if dtype == torch.float64 else torch.complex64
        )
    )
    y, z = fast(torch.tensor(u, dtype=dtype, device=device), z0)
    assert_close(f"y ({disc})", y_ref, y.cpu(), RATIOS[dtype])
    x = fast.from_eigenbasis(z).cpu()
    assert_close(
        f"last state ({disc})",
        np.stack([x_ref.real, x_ref.imag]),
        torch.stack([x.real, x.imag]),
        RATIOS[dtype],
    )


def test_direct_discretization_is_literally_a_3x3_convolution_of_the_state():
    layer = make_layer(2, 6, "direct", seed=4)
    A_bar, _ = layer.discretize(5, 7)
    args = reference_arguments(params_of(layer), "softplus", "direct")
    K = np.exp(args["Lambda"] * args["step"])[:, None, None] * ptt_kernel(args["coefficients"])
    x = np.random.default_rng(0).standard_normal((1, 3, 5, 7)) + 0j
    via_conv = depthwise_conv3x3(x, K)
    z = layer.to_eigenbasis(torch.tensor(x))
    via_scan = layer.from_eigenbasis(A_bar * z).detach().numpy()
    np.testing.assert_allclose(via_scan, via_conv, atol=1e-12)


def test_sequential_mode_and_step_by_step_inference_equal_the_parallel_scan():
    layer = make_layer(2, 8, seed=1)
    u = torch.randn(2, 11, 2, 4, 5, dtype=torch.float64)
    y, z = layer(u)
    layer.parallel = False
    y_seq, _ = layer(u)
    layer.parallel = True
    close(y_seq, y, atol=1e-12)
    state = layer.initial_state(2, 4, 5)
    ys = []
    for k in range(11):
        y_k, state = layer.step(u[:, k], state)
        ys.append(y_k)
    close(torch.stack(ys, 1), y, atol=1e-12)
    close(state, z, atol=1e-12)


@pytest.mark.parametrize("T", [1, 2, 7, 64, 100])
def test_log_depth_scan_equals_the_loop(T):
    g = torch.Generator().manual_seed(T)
    a = (
        torch.complex(
            torch.rand(3, 4, 2, generator=g, dtype=torch.float64),
            torch.randn(3, 4, 2, generator=g, dtype=torch.float64) * 0.2,
        )
        * 0.9
    )
    b = torch.randn(2, T, 3, 4, 2, generator=g, dtype=torch.complex128)
    close(parallel_scan(a, b), sequential_scan(a, b), atol=1e-12)


@pytest.mark.parametrize("disc", ["zoh", "direct"])
def test_with_off_centre_taps_zero_convt3_is_exactly_convs5(disc):
    t3 = ConvT3SSM(
        3, 8, state_kernel="3x3", lambda_param="clip", discretization=disc, seed=7
    ).double()
    s5 = ConvT3SSM(3, 8, state_kernel="1x1", lambda_param="clip", seed=7).double()
    s5.load_state_dict({k: v for k, v in t3.state_dict().items() if k != "corner_logits"})
    # equal corner logits: eps = 1 everywhere, i.e. the 3x3 kernel is the identity tap only
    args = reference_arguments(params_of(t3), "clip", disc)
    np.testing.assert_allclose(args["coefficients"], np.tile([1.0, 0, 0, 0], (4, 1)), atol=1e-15)
    u = torch.randn(2, 9, 3, 5, 4, dtype=torch.float64)
    y3, _ = t3(u)
    y5, _ = s5(u)
    close(y3, y5, atol=1e-12)
    p = reference_arguments(params_of(s5), "clip", "zoh")
    y_ref, _ = convs5_sequential(u.numpy(), p["Lambda"], p["step"], p["B"], p["C"])
    np.testing.assert_allclose(y5.detach().numpy(), y_ref, atol=1e-12)


@pytest.mark.parametrize("disc", ["zoh", "direct"])
def test_states_stay_bounded_over_1000_steps_for_random_parameters(disc):
    for seed in range(5):
        layer = make_layer(1, 8, disc, seed=seed)
        with torch.no_grad():
            layer.corner_logits.mul_(4)  # extreme corners: some spatial eigenvalues near 0 or 4
            layer.log_step.fill_(float(np.log(0.5)))
        with torch.no_grad():
            A_bar, _ = layer.discretize(8, 8)
        assert A_bar.abs().max() < 1
        u = torch.rand(1, 1000, 1, 8, 8, dtype=torch.float64)
        with torch.no_grad():
            y, _ = layer(u)
            bound = layer(torch.ones(1, 1, 1, 8, 8, dtype=torch.float64))[0].abs().max().item()
        assert torch.isfinite(y).all()
        # a bounded input gives a bounded output: at most the geometric sum of |A_bar|
        scale = 1 / (1 - A_bar.abs().max())
        assert y.abs().max() <= float(scale * bound * 64 + 1)


def test_translation_equivariance_away_from_the_border():
    for disc, tol in (("direct", 1e-12), ("zoh", 1e-6)):
        layer = make_layer(2, 6, disc, seed=3)
        u = torch.zeros(1, 4, 2, 40, 40, dtype=torch.float64)
        u[..., 18:21, 17:20] = torch.randn(1, 4, 2, 3, 3, dtype=torch.float64)
        shifted = torch.roll(u, (2, 3), (-2, -1))
        with torch.no_grad():
            y, y_s = layer(u)[0], layer(shifted)[0]
        diff = (torch.roll(y, (2, 3), (-2, -1)) - y_s)[..., 8:32, 8:32]
        assert diff.abs().max() <= tol * y.abs().max(), (disc, float(diff.abs().max()))


def test_gradients_reach_every_parameter_and_are_finite():
    layer = make_layer(2, 4, seed=2)
    u = torch.randn(1, 6, 2, 4, 4, dtype=torch.float64)
    y, _ = layer(u)
    y.square().sum().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


def test_bad_input_raises_clearly():
    layer = ConvT3SSM(2, 4, seed=0)
    with pytest.raises(
        ValueError, match=r"u: expected shape \(batch, time, features, height, width\)"
    ):
        layer(torch.zeros(2, 3, 4, 4))
    with pytest.raises(ValueError, match="expected 2 features on axis 2"):
        layer(torch.zeros(1, 3, 3, 4, 4))
    with pytest.raises(ValueError, match="NaN or infinite"):
        layer(torch.full((1, 3, 2, 4, 4), float("nan")))
    with pytest.raises(ValueError, match="batch >= 1 and time >= 1"):
        layer(torch.zeros(1, 0, 2, 4, 4))
    with pytest.raises(TypeError, match="u: expected a torch.Tensor"):
        layer(np.zeros((1, 3, 2, 4, 4)))
    with pytest.raises(ValueError, match="state: expected shape"):
        layer(torch.zeros(1, 3, 2, 4, 4), torch.zeros(1, 2, 4, 5, dtype=torch.complex64))
    wide = ConvT3SSM(2, 4, alpha_w=4.0, seed=0)
    with pytest.raises(ValueError, match="u width: a grid of 40 .* condition number"):
        wide(torch.zeros(1, 2, 2, 4, 40))
    with pytest.raises(ValueError, match="u: expected a tensor of shape"):
        layer.step(torch.zeros(1, 1, 2, 4, 4), layer.initial_state(1, 4, 4))


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"state_size": 5}, ValueError, "state_size: expected an even int"),
        ({"kernel_b": 2}, ValueError, "kernel_b: expected an odd kernel size"),
        ({"state_kernel": "5x5"}, ValueError, "state_kernel: expected one of"),
        ({"discretization": "bilinear"}, ValueError, "discretization: expected one of"),
        ({"lambda_param": "exp"}, ValueError, "lambda_param: expected one of"),
        ({"alpha_h": -1.0}, ValueError, "alpha_h: expected a finite ratio"),
        ({"alpha_w": "1"}, TypeError, "alpha_w: expected a positive float"),
        ({"dt_min": 0.5, "dt_max": 0.1}, ValueError, "dt_min, dt_max"),
        ({"blocks": 0}, ValueError, "blocks: expected an int >= 1"),
        ({"features": 2.0}, TypeError, "features: expected an int"),
    ],
)
def test_bad_configuration_raises_clearly(kwargs, error, match):
    args = {"features": 2, "state_size": 4} | kwargs
    with pytest.raises(error, match=match):
        ConvT3SSM(**args)
