"""MiniT3 (the note's ablation): ConvT3 with one spatial kernel shared by all state channels."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from convt3.params import expand_corner_logits, reference_arguments  # noqa: E402
from convt3.reference import convt3_sequential  # noqa: E402
from convt3.spectral import corners_to_coefficients, ptt_kernel  # noqa: E402
from convt3.torch import ConvT3SSM, FramePredictor, PredictorConfig, count_parameters  # noqa: E402

from shared_core.testing import assert_close  # noqa: E402


def random_minit3(U=2, S=8, disc="zoh", seed=0):
    layer = ConvT3SSM(U, S, state_kernel="3x3_shared", discretization=disc, seed=seed).double()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        layer.corner_logits.copy_(2 * torch.randn(1, 3, generator=g, dtype=torch.float64))
        layer.log_step.copy_(torch.empty(layer.P, dtype=torch.float64).uniform_(-3, 0, generator=g))
        layer.Lambda_re.add_(torch.randn(layer.P, generator=g, dtype=torch.float64))
    return layer


def test_minit3_adds_three_parameters_per_layer_24_over_8_layers():
    """The note: "MiniT3 (+24 params) ... only 3 extra params per layer" (8 layers)."""
    counts = {}
    for model in ("convs5", "minit3", "convt3"):
        cfg = PredictorConfig(model=model, in_channels=2, d_model=8, state_size=16, n_layers=8)
        torch.manual_seed(0)
        counts[model] = count_parameters(FramePredictor(cfg))
    assert counts["minit3"] - counts["convs5"] == 24
    assert counts["convt3"] - counts["convs5"] == 8 * 8 * 4  # P = 8 channels x 4 corner logits
    layer = ConvT3SSM(3, 16, state_kernel="3x3_shared", seed=0)
    assert tuple(layer.corner_logits.shape) == (1, 3)


@pytest.mark.parametrize("disc", ["zoh", "direct"])
def test_minit3_equals_the_explicit_3x3_recurrence_with_one_shared_kernel(disc):
    """The shared logits ``[l_1, l_2, l_3, 0]`` give every channel the same 3x3 kernel; the scan
    follows the explicit convolution loop with those coefficients, built here without the
    package's expansion."""
    layer = random_minit3(disc=disc, seed=3)
    logits = np.append(layer.corner_logits.detach().numpy()[0], 0.0)
    corners = 4 * np.exp(logits) / np.exp(logits).sum()
    if disc == "direct":
        corners = corners / corners.max()
    coeffs = np.tile(corners_to_coefficients(corners[None])[0], (layer.P, 1))
    params = {k: v.detach().numpy() for k, v in layer.named_parameters()}
    args = reference_arguments(params, layer.lambda_param, disc)
    np.testing.assert_allclose(args["coefficients"], coeffs, rtol=0, atol=1e-14)
    eps = layer.spatial_spectrum(5, 6).detach().numpy()
    np.testing.assert_array_equal(eps, np.broadcast_to(eps[:1], eps.shape))  # one kernel for all
    if disc == "zoh":  # the centre tap a = 1: three free parameters
        assert ptt_kernel(coeffs[0])[1, 1] == pytest.approx(1.0, abs=1e-14)
    rng = np.random.default_rng(0)
    u = rng.standard_normal((2, 11, 2, 5, 6))
    x0 = rng.standard_normal((2, layer.P, 5, 6)) + 1j * rng.standard_normal((2, layer.P, 5, 6))
    y_ref, x_ref = convt3_sequential(u, **args, x0=x0, discretization=disc)
    y, z = layer(torch.tensor(u), layer.to_eigenbasis(torch.tensor(x0)))
    assert_close(f"y ({disc})", y_ref, y, 1e-10)
    x = layer.from_eigenbasis(z).detach()
    assert_close(
        f"last state ({disc})", np.stack([x_ref.real, x_ref.imag]), torch.stack([x.real, x.imag]),
        1e-10,
    )  # fmt: skip


def test_minit3_is_convt3_with_equal_per_channel_corners():
    mini = random_minit3(seed=5)
    full = ConvT3SSM(2, 8, state_kernel="3x3", seed=5).double()
    with torch.no_grad():
        for name, p in mini.named_parameters():
            if name != "corner_logits":
                getattr(full, name).copy_(p)
        full.corner_logits.copy_(torch.tensor(expand_corner_logits(mini.corner_logits.numpy(), 4)))
    u = torch.tensor(np.random.default_rng(1).standard_normal((1, 7, 2, 6, 6)))
    np.testing.assert_allclose(mini(u)[0].detach().numpy(), full(u)[0].detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(
        mini.spatial_spectrum(6, 6).detach().numpy(), full.spatial_spectrum(6, 6).detach().numpy(),
        atol=1e-14,
    )  # fmt: skip


def test_minit3_shared_logits_receive_gradients():
    layer = random_minit3(seed=2)
    u = torch.tensor(np.random.default_rng(2).standard_normal((1, 5, 2, 4, 4)))
    layer(u)[0].square().sum().backward()
    grad = layer.corner_logits.grad
    assert grad is not None and torch.isfinite(grad).all() and grad.abs().sum() > 0


def test_expand_corner_logits_rejects_other_shapes():
    with pytest.raises(ValueError, match=r"corner_logits: expected shape \(4, 4\) or \(1, 3\)"):
        expand_corner_logits(np.zeros((1, 4)), 4)
