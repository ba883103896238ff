"""The online (flash) attention entropy against the naive oracle, and its limit cases."""

from __future__ import annotations

import math

import pytest
import torch
from toprovar import reference
from toprovar.entropy import attention_with_entropy

from shared_core.testing import assert_close

TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-5, torch.bfloat16: 1e-2}


def _inputs(b=2, h=3, nq=37, nk=53, d=16, seed=0, spread=3.0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, nq, d, generator=g, dtype=torch.float64) * spread
    k = torch.randn(b, h, nk, d, generator=g, dtype=torch.float64)
    v = torch.randn(b, h, nk, d, generator=g, dtype=torch.float64)
    return q, k, v


METHODS = ["sdpa", "blockwise"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("block_size", [1, 7, 53, 128])
def test_online_entropy_matches_naive(device, dtype, block_size, method):
    q, k, v = _inputs()
    out_ref, h_ref = reference.attention_entropy(q, k, v)
    out, h = attention_with_entropy(
        *(t.to(device, dtype) for t in (q, k, v)), block_size=block_size, method=method
    )
    assert h is not None
    assert_close(f"H {dtype} bs={block_size}", h_ref, h.cpu(), TOLERANCE[dtype])
    assert_close(f"out {dtype} bs={block_size}", out_ref, out.cpu(), TOLERANCE[dtype])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("block_size", [5, 32])
def test_online_entropy_with_masked_keys(device, dtype, block_size, method):
    q, k, v = _inputs(nq=41, nk=41)
    g = torch.Generator().manual_seed(1)
    mask = torch.rand(2, 1, 41, 41, generator=g) < 0.4
    mask |= torch.eye(41, dtype=torch.bool)  # every query keeps one key
    mask[:, :, :, :11] = False  # a whole first block masked for every query (bs=5 and 32)
    mask[:, :, :, 11] = True
    out_ref, h_ref = reference.attention_entropy(q, k, v, mask)
    out, h = attention_with_entropy(
        *(t.to(device, dtype) for t in (q, k, v)),
        mask=mask.to(device),
        block_size=block_size,
        method=method,
    )
    assert h is not None
    assert_close(f"masked H {dtype}", h_ref, h.cpu(), TOLERANCE[dtype])
    assert_close(f"masked out {dtype}", out_ref, out.cpu(), TOLERANCE[dtype])


@pytest.mark.parametrize("method", METHODS)
def test_block_causal_mask_matches_naive(method):
    from toprovar.model import block_causal_mask

    mask = block_causal_mask((1, 2, 4))
    q, k, v = _inputs(nq=21, nk=21)
    _, h_ref = reference.attention_entropy(q, k, v, mask)
    _, h = attention_with_entropy(q, k, v, mask=mask, block_size=4, method=method)
    assert_close("block-causal H", h_ref, h, 1e-10)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", [1, 5, 300])
def test_uniform_attention_has_entropy_log_n(n, method):
    q = torch.zeros(1, 2, 3, 8, dtype=torch.float64)
    k = torch.randn(1, 2, n, 8, dtype=torch.float64)
    _, h = attention_with_entropy(q, k, k, block_size=7, method=method)
    assert h is not None
    assert torch.allclose(h, torch.full_like(h, math.log(n)), atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_one_hot_attention_has_entropy_zero(method):
    k = torch.eye(6, dtype=torch.float64)[None, None]  # keys e_j
    q = 1e4 * k[:, :, [2, 0, 5]]  # query i points at one key only
    _, h = attention_with_entropy(q, k, k, block_size=2, method=method)
    assert h is not None
    assert torch.allclose(h, torch.zeros_like(h), atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_masking_one_key_leaves_log_of_the_rest(method):
    q = torch.zeros(1, 1, 2, 4, dtype=torch.float64)
    k = torch.randn(1, 1, 10, 4, dtype=torch.float64)
    mask = torch.ones(2, 10, dtype=torch.bool)
    mask[:, 3:] = False
    _, h = attention_with_entropy(q, k, k, mask=mask, block_size=3, method=method)
    assert h is not None
    assert torch.allclose(h, torch.full_like(h, math.log(3)), atol=1e-12)


def test_without_entropy_gives_the_same_output():
    q, k, v = _inputs()
    a, h = attention_with_entropy(q, k, v, block_size=9, need_entropy=False, method="blockwise")
    b, _ = attention_with_entropy(q, k, v, block_size=9, method="blockwise")
    assert h is None and torch.equal(a, b)
    c, h = attention_with_entropy(q, k, v, need_entropy=False)  # SDPA's output
    d, _ = attention_with_entropy(q, k, v, block_size=9)
    assert h is None
    assert_close("sdpa out without vs with H", c, d, 1e-12)


def test_bad_inputs_raise():
    q, k, v = _inputs()
    with pytest.raises(TypeError, match="q: expected a torch.Tensor"):
        attention_with_entropy(q.numpy(), k, v)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="q: expected 4 dimensions"):
        attention_with_entropy(q[0], k, v)
    with pytest.raises(ValueError, match="q, k, v: expected"):
        attention_with_entropy(q, k[..., :4], v)
    with pytest.raises(TypeError, match="k: expected a floating-point"):
        attention_with_entropy(q, k.long(), v)
    with pytest.raises(ValueError, match="block_size: expected a positive int"):
        attention_with_entropy(q, k, v, block_size=0)
    with pytest.raises(TypeError, match="mask: expected a bool tensor"):
        attention_with_entropy(q, k, v, mask=torch.ones(37, 53))
    with pytest.raises(ValueError, match="mask: expected a shape broadcastable"):
        attention_with_entropy(q, k, v, mask=torch.ones(37, 52, dtype=torch.bool))
    with pytest.raises(ValueError, match="at least one allowed key"):
        attention_with_entropy(q, k, v, mask=torch.zeros(37, 53, dtype=torch.bool))
    with pytest.raises(ValueError, match="method: expected 'sdpa' or 'blockwise'"):
        attention_with_entropy(q, k, v, method="flash")
