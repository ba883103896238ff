"""MesaLayer: parameterisation of gates and Lambda, decoding with a cache, input errors."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from conftest import RATIOS  # noqa: E402
from mesa_layer.torch import MesaCache, MesaLayer  # noqa: E402

from shared_core.testing import assert_close  # noqa: E402


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
    assert_close("decoded y", y_full, torch.cat(ys, 1), 1e-10)
    assert_close("decoded H", cache_full.H, cache.H, 1e-12)
    assert_close("decoded G", cache_full.G, cache.G, 1e-12)
    assert_close("decoded conv_q", cache_full.conv_q, cache.conv_q, 1e-14)


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
    assert_close("prefill + decode", y_full, torch.cat(outs, 1), 1e-10)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_layer_in_lower_precision_matches_float64(device, dtype):
    torch.manual_seed(3)
    layer = MesaLayer(32, 2, max_cg_steps_train=16).double()
    x = torch.randn(2, 40, 32, dtype=torch.float64)
    ref = layer(x)
    fast = layer.to(device=device, dtype=dtype)(x.to(device=device, dtype=dtype))
    assert fast.dtype == dtype
    assert_close(f"MesaLayer {dtype}", ref, fast, 10 * RATIOS[dtype])


def test_cache_holds_value_heads_of_the_value_size():
    layer = MesaLayer(32, 2, head_dim=8)
    cache = layer.init_cache(3)
    assert cache.H.shape == (3, 2, 8, 8) and cache.G.shape == (3, 2, layer.value_head_dim, 8)
    y, cache = layer(torch.randn(3, 1, 32), cache=cache, use_cache=True)
    assert y.shape == (3, 1, 32)
    bad = MesaCache(H=cache.H, G=cache.G[:, :, :5], conv_q=cache.conv_q, conv_k=cache.conv_k)
    with pytest.raises(ValueError, match="cache: G_0 expected shape"):
        layer(torch.randn(3, 1, 32), cache=bad)
    with pytest.raises(ValueError, match="cache: conv_q expected shape"):
        layer(torch.randn(2, 1, 32), cache=cache)
    with pytest.raises(TypeError, match="cache: expected a MesaCache"):
        layer(torch.randn(3, 1, 32), cache=(cache.H, cache.G))


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


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"num_heads": 5}, ValueError, "num_heads: expected a divisor of hidden_size=32"),
        ({"num_heads": 0}, ValueError, "num_heads: expected a positive int, got 0"),
        ({"hidden_size": 0}, ValueError, "hidden_size: expected a positive int"),
        ({"head_dim": 0}, ValueError, "head_dim: expected a positive int"),
        ({"chunk_size": 0}, ValueError, "chunk_size: expected a positive int"),
        ({"max_cg_steps_train": -1}, ValueError, "max_cg_steps_train"),
    ],
)
def test_bad_layer_configuration(kwargs, error, match):
    with pytest.raises(error, match=match):
        MesaLayer(**{"hidden_size": 32, "num_heads": 2, **kwargs})


@pytest.mark.parametrize(
    "x,error,match",
    [
        (torch.randn(2, 5, 32, dtype=torch.float64), TypeError, "x: dtype torch.float64 differs"),
        (torch.ones(2, 5, 32, dtype=torch.long), TypeError, "x: expected floating-point"),
        (torch.randn(2, 0, 32), ValueError, "x: expected at least one sequence and one time step"),
        (torch.full((1, 3, 32), float("nan")), ValueError, "x: contains NaN"),
        ([[0.0] * 32], TypeError, "x: expected a torch.Tensor"),
    ],
)
def test_bad_layer_input(x, error, match):
    with pytest.raises(error, match=match):
        MesaLayer(32, 2)(x)


def test_bad_inference_compute_arguments():
    layer = MesaLayer(32, 2)
    with pytest.raises(ValueError, match="cg_steps"):
        layer(torch.randn(1, 3, 32), cg_steps=-1)
    with pytest.raises(ValueError, match="cg_tol"):
        layer(torch.randn(1, 3, 32), cg_tol=-0.5)
    with pytest.raises(ValueError, match="batch"):
        layer.init_cache(0)


def test_q_start_layer_reads_out_at_zero_cg_steps():
    torch.manual_seed(0)
    x = torch.randn(1, 12, 16)
    zero, q_start = MesaLayer(16, 2), MesaLayer(16, 2, cg_start="q")
    q_start.load_state_dict(zero.state_dict())
    assert zero(x, cg_steps=0).abs().max() == 0  # o = 0 -> RMSNorm(0) = 0 -> W_o 0 = 0
    assert q_start(x, cg_steps=0).abs().max() > 0
    torch.testing.assert_close(zero(x, cg_steps=30), q_start(x, cg_steps=30), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="cg_start: expected one of"):
        MesaLayer(16, 2, cg_start="x")
