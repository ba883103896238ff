"""FEMAttention: widths, causality in float32 and bfloat16, TDC identity, cache, gradcheck, errors."""

from __future__ import annotations

import math

import pytest
import torch
from free_energy_mixer.fem import free_energy_read
from free_energy_mixer.layer import BaseAttention, FEMAttention, FEMCache, FEMConfig
from free_energy_mixer.priors import softmax_prior

from shared_core.testing import assert_close

PRIORS = ["softmax", "linear", "gla"]


def _layer(prior: str, tdc_scale: float = 0.1, **kw) -> FEMAttention:
    torch.manual_seed(0)
    layer = FEMAttention(FEMConfig(64, 4, prior=prior, tdc_hidden=16, chunk_size=8, **kw))
    if layer.tdc is not None and tdc_scale:  # a trained-like TDC, so that it is exercised
        torch.nn.init.normal_(layer.tdc.out_proj, std=tdc_scale)
    return layer


def test_width_budget_matches_public_code() -> None:
    cfg = FEMConfig(512, 8)
    assert cfg.value_dim == 256 and cfg.qk_dim == 512  # E = D/2, |Q| = |K| = 2E
    assert (cfg.value_dim // 8) % 4 == 0
    cfg = FEMConfig(100, 3)
    assert cfg.value_dim == 48 and (cfg.value_dim // 3) % 4 == 0  # 50 -> nearest multiple of 12
    assert cfg.qk_dim % 6 == 0
    layer = FEMAttention(FEMConfig(64, 4, use_tdc=False))
    weights = sum(p.numel() for n, p in layer.named_parameters() if n.endswith("weight"))
    assert weights == 4 * 64 * 64  # 8 D E = 4 D^2: standard attention's budget


def test_beta_init() -> None:
    layer = FEMAttention(FEMConfig(32, 2))
    assert torch.allclose(layer.beta, torch.full((2, 8), math.log1p(math.exp(1.8)) + 1e-6))
    assert abs(float(layer.beta[0, 0].detach()) - 1.953) < 1e-3


@pytest.mark.parametrize("prior", PRIORS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_causal_with_huge_future_value(prior: str, dtype: torch.dtype) -> None:
    """y_t is bit-identical when any x_{t'} (t' > t) changes, even to a huge value."""
    layer = _layer(prior).to(dtype)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 40, 64, generator=g).to(dtype)
    y = layer(x)
    for t_future, value in ((25, 1e6), (12, -3e4), (39, 5e5)):
        x2 = x.clone()
        x2[:, t_future] = value
        x2[0, t_future + 1 :] = torch.randn(40 - t_future - 1, 64, generator=g).to(dtype)
        y2 = layer(x2)
        assert torch.equal(y[:, :t_future], y2[:, :t_future]), (prior, dtype, t_future)
        assert not torch.equal(y[:, t_future], y2[:, t_future])


def _global_max_read(q, k, v, beta, cap=40.0):
    """The public code's shift: a detached max over the WHOLE sequence (a causal leak)."""
    b = beta[None, :, None, :]
    v_c = torch.minimum(torch.maximum(v, -cap / b), cap / b)
    M = (b * v_c).amax(dim=2, keepdim=True).detach()
    read = softmax_prior(q, k, torch.cat([v_c, torch.exp(b * v_c - M)], -1))
    mu, z = read.split(v.shape[-1], -1)
    return mu, (torch.log(z.float().clamp_min(1e-38)) + M.float()).to(v.dtype) / b


def test_global_max_shift_would_fail_the_causality_check() -> None:
    """The check above can fail: with the public code's whole-sequence max, a huge future
    value changes earlier outputs in bfloat16; with our shift it does not."""
    g = torch.Generator().manual_seed(2)
    q, k = (torch.randn(1, 2, 32, 8, generator=g).bfloat16() for _ in range(2))
    v = (torch.randn(1, 2, 32, 4, generator=g) * 0.3).bfloat16()
    beta = torch.full((2, 4), 1.953).bfloat16()
    v2 = v.clone()
    v2[:, :, 30] = 1e4  # clipped to the cap: the whole-sequence max jumps to 40
    leak = (
        _global_max_read(q, k, v, beta)[1][:, :, :30]
        != _global_max_read(q, k, v2, beta)[1][:, :, :30]
    )
    assert leak.any()
    ours = free_energy_read(softmax_prior, q, k, v, beta)[1][:, :, :30]
    ours2 = free_energy_read(softmax_prior, q, k, v2, beta)[1][:, :, :30]
    assert torch.equal(ours, ours2)


@pytest.mark.parametrize("prior", PRIORS)
def test_zero_init_tdc_is_identity(prior: str) -> None:
    with_tdc = _layer(prior, tdc_scale=0.0)
    without = FEMAttention(FEMConfig(64, 4, prior=prior, use_tdc=False, chunk_size=8))
    missing, unexpected = without.load_state_dict(with_tdc.state_dict(), strict=False)
    assert not missing and all(n.startswith("tdc.") for n in unexpected)
    x = torch.randn(2, 30, 64)
    assert torch.equal(with_tdc(x), without(x))


@pytest.mark.parametrize("prior", PRIORS)
def test_decoding_cache_equals_full_forward(prior: str) -> None:
    layer = _layer(prior)
    x = torch.randn(2, 21, 64)
    full = layer(x)
    cache = FEMCache()
    parts = [layer(x[:, :9], cache)] + [layer(x[:, t : t + 1], cache) for t in range(9, 21)]
    assert cache.position == 21
    assert_close(f"{prior} cached", full, torch.cat(parts, 1), 1e-5)
    if prior != "softmax":  # constant memory: one state, no growing key cache
        assert cache.keys is None and cache.state is not None
        assert cache.state.shape == (2, 4, layer.d_k, layer.d_v * 2 + 1)


@pytest.mark.parametrize("prior", PRIORS)
def test_base_attention_cache(prior: str) -> None:
    torch.manual_seed(0)
    layer = BaseAttention(FEMConfig(32, 2, prior=prior, chunk_size=4))
    x = torch.randn(1, 11, 32)
    cache = FEMCache()
    parts = [layer(x[:, :5], cache)] + [layer(x[:, t : t + 1], cache) for t in range(5, 11)]
    assert_close(f"base {prior} cached", layer(x), torch.cat(parts, 1), 1e-5)


@pytest.mark.parametrize("prior", PRIORS)
def test_layer_dtypes(device: str, prior: str) -> None:
    layer = _layer(prior).double()
    x = torch.randn(2, 24, 64, dtype=torch.float64)
    ref = layer(x)
    for dtype, ratio in ((torch.float32, 1e-5), (torch.bfloat16, 3e-2)):
        fast = layer.to(device, dtype)(x.to(device, dtype))
        assert_close(f"layer {prior} {dtype}", ref, fast, ratio)
        layer = layer.double().cpu()


@pytest.mark.parametrize("prior", PRIORS)
def test_layer_gradcheck(prior: str) -> None:
    torch.manual_seed(0)
    layer = FEMAttention(FEMConfig(16, 2, prior=prior, tdc_hidden=4, chunk_size=4)).double()
    torch.nn.init.normal_(layer.tdc.out_proj, std=0.1)
    x = torch.randn(1, 6, 16, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(layer, (x,))


def test_custom_prior_plugs_in() -> None:
    """A prior callable replaces the named one: here uniform causal averaging."""

    def uniform(q, k, values):
        n = torch.arange(1, values.shape[2] + 1, dtype=values.dtype)[:, None]
        return values.cumsum(2) / n

    layer = FEMAttention(FEMConfig(32, 2, use_tdc=False), prior_fn=uniform)
    y = layer(torch.randn(1, 7, 32))
    assert y.shape == (1, 7, 32) and torch.isfinite(y).all()
    with pytest.raises(ValueError, match="cache: decoding needs a named prior"):
        layer(torch.randn(1, 7, 32), FEMCache())


def test_bad_config_and_input() -> None:
    with pytest.raises(ValueError, match="prior: expected one of"):
        FEMConfig(32, 2, prior="mamba")
    with pytest.raises(ValueError, match="value_cap: expected a finite number > 0"):
        FEMConfig(32, 2, value_cap=0.0)
    with pytest.raises(ValueError, match="fem_ratio"):
        FEMConfig(32, 2, fem_ratio=-1.0)
    with pytest.raises(ValueError, match="num_heads: expected a positive int"):
        FEMConfig(32, 0)
    with pytest.raises(ValueError, match="beta_init: expected a finite number"):
        FEMConfig(32, 2, beta_init=math.inf)
    with pytest.raises(TypeError, match="config: expected a FEMConfig"):
        FEMAttention({"d_model": 32})  # type: ignore[arg-type]
    layer = FEMAttention(FEMConfig(32, 2))
    with pytest.raises(ValueError, match="x: expected last dimension d_model=32"):
        layer(torch.randn(1, 5, 31))
    with pytest.raises(ValueError, match=r"x: expected shape \(batch, time, d_model\)"):
        layer(torch.randn(5, 32))
    with pytest.raises(ValueError, match="x: contains NaN"):
        layer(torch.full((1, 5, 32), math.nan))
    with pytest.raises(TypeError, match="x: expected a torch.Tensor"):
        layer([[0.0] * 32])  # type: ignore[arg-type]
    # issue 46: float64 input to a float32 layer gave torch's "mat1 and mat2 ..." error
    with pytest.raises(TypeError, match=r"x: expected dtype torch.float32 .*got torch.float64"):
        layer(torch.randn(1, 5, 32, dtype=torch.float64))
    assert layer.double()(torch.randn(1, 5, 32, dtype=torch.float64)).dtype == torch.float64
    with pytest.raises(ValueError, match="d_model: expected a multiple of 2 \\* num_heads"):
        BaseAttention(FEMConfig(30, 4))
