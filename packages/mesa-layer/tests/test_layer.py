"""MesaLayer: parameterisation of gates and Lambda, decoding with a cache, input errors."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mesa_layer.torch import MesaLayer  # noqa: E402


def test_lambda_initialised_to_one_and_kept_above_floor():
    layer = MesaLayer(32, 2)
    torch.testing.assert_close(layer.Lambda, torch.ones(2, 16))
    assert layer.lambda_params._no_weight_decay
    with torch.no_grad():
        layer.lambda_params.fill_(-50.0)
    assert bool((layer.Lambda >= 0.25).all()) and layer.Lambda.min().item() < 0.2500001


def test_gates_at_init_match_fla():
    torch.manual_seed(0)
    layer = MesaLayer(32, 2)
    x = torch.randn(2, 5, 32) * 0.01
    _, _, _, g, beta, _, _ = layer._project(x, None)
    torch.testing.assert_close(g.exp(), torch.full_like(g, 0.5), atol=0.02, rtol=0)
    torch.testing.assert_close(beta, torch.full_like(beta, 0.5), atol=0.02, rtol=0)


def test_shapes_and_dtype():
    layer = MesaLayer(32, 4, use_output_gate=True)
    y = layer(torch.randn(3, 9, 32))
    assert y.shape == (3, 9, 32) and y.dtype == torch.float32


def test_step_by_step_decoding_equals_full_forward():
    torch.manual_seed(0)
    layer = MesaLayer(32, 2, max_cg_steps_train=20, max_cg_steps_decode=20).double()
    x = torch.randn(2, 11, 32, dtype=torch.float64)
    y_full, cache_full = layer(x, use_cache=True)
    cache = layer.init_cache(2, dtype=torch.float64)
    ys = []
    for t in range(11):
        y_t, cache = layer(x[:, t : t + 1], cache=cache, use_cache=True)
        ys.append(y_t)
    torch.testing.assert_close(torch.cat(ys, 1), y_full, atol=1e-10, rtol=0)
    torch.testing.assert_close(cache.H, cache_full.H, atol=1e-12, rtol=0)
    torch.testing.assert_close(cache.conv_q, cache_full.conv_q, atol=1e-14, rtol=0)


def test_prefill_then_decode_equals_full_forward():
    torch.manual_seed(1)
    layer = MesaLayer(32, 2, max_cg_steps_train=20, max_cg_steps_decode=20).double()
    x = torch.randn(1, 10, 32, dtype=torch.float64)
    y_full = layer(x)
    y_pre, cache = layer(x[:, :7], use_cache=True)
    outs = [y_pre]
    for t in range(7, 10):
        y_t, cache = layer(x[:, t : t + 1], cache=cache, use_cache=True)
        outs.append(y_t)
    torch.testing.assert_close(torch.cat(outs, 1), y_full, atol=1e-10, rtol=0)


def test_causality():
    torch.manual_seed(2)
    layer = MesaLayer(32, 2)
    x = torch.randn(1, 20, 32)
    x2 = x.clone()
    x2[:, 12:] += torch.randn(1, 8, 32)
    torch.testing.assert_close(layer(x)[:, :12], layer(x2)[:, :12], atol=1e-6, rtol=0)


def test_bad_configuration_and_input():
    with pytest.raises(ValueError, match="lambda_lower_bound"):
        MesaLayer(32, 2, lambda_lower_bound=0.0)
    with pytest.raises(ValueError, match="lambda_init"):
        MesaLayer(32, 2, lambda_init=0.2)
    with pytest.raises(ValueError, match="x: expected shape"):
        MesaLayer(32, 2)(torch.randn(2, 5, 31))
