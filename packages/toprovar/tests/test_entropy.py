"""The online (flash) attention entropy against the naive oracle, and its limit cases."""

from __future__ import annotations

import math

import pytest
import torch
from toprovar import entropy, reference
from toprovar.entropy import attention_with_entropy

from shared_core.testing import assert_close

TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-5, torch.bfloat16: 1e-2}


def _inputs(b=2, h=3, nq=37, nk=53, d=16, seed=0, spread=3.0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, nq, d, generator=g, dtype=torch.float64) * spread
    k = torch.randn(b, h, nk, d, generator=g, dtype=torch.float64)
    v = torch.randn(b, h, nk, d, generator=g, dtype=torch.float64)
    return q, k, v


METHODS = ["sdpa", "chunked", "blockwise"]


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
    with pytest.raises(ValueError, match="method: expected one of"):
        attention_with_entropy(q, k, v, method="flash")


@pytest.mark.parametrize("chunk", [1, 6 * 53, 10**9])  # 1 row, 6 rows of a head, all heads
@pytest.mark.parametrize("masked", [False, True])
def test_fused_lse_path_across_chunk_boundaries(monkeypatch, chunk, masked):
    """The CPU default (flash attention's log-sum-exp + a blocked second pass over the
    scores) equals the naive oracle however its second pass is cut into chunks."""
    if entropy._FLASH_LSE is None:
        pytest.skip("this torch has no _scaled_dot_product_flash_attention_for_cpu")
    monkeypatch.setattr(entropy, "_LSE_CHUNK", chunk)
    q, k, v = _inputs()
    g = torch.Generator().manual_seed(3)
    mask = torch.rand(2, 1, 37, 53, generator=g) < 0.6 if masked else None
    if mask is not None:
        mask[..., 5] = True
    out_ref, h_ref = reference.attention_entropy(q, k, v, mask)
    assert entropy._lse_path_applies(q, k, v)
    out, h = entropy._lse_entropy(q, k, v, mask)
    assert_close("fused-path H", h_ref, h, 1e-10)
    assert_close("fused-path out", out_ref, out, 1e-10)


def test_sdpa_falls_back_to_chunked_where_the_fused_op_cannot_run(monkeypatch):
    """Without the private op (other torch versions) or with ``dim_v != dim``, ``"sdpa"`` is
    the ``"chunked"`` path, bit for bit (the fused C++ kernel turned off)."""
    q, k, v = _inputs()
    monkeypatch.setenv("TOPROVAR_FUSED", "0")
    monkeypatch.setattr(entropy, "_FLASH_LSE", None)
    a = attention_with_entropy(q, k, v, block_size=9)
    b = attention_with_entropy(q, k, v, block_size=9, method="chunked")
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    monkeypatch.undo()
    monkeypatch.setenv("TOPROVAR_FUSED", "0")
    wide_v = torch.cat([v, v], -1)
    out_ref, h_ref = reference.attention_entropy(q, k, wide_v)
    assert not entropy._lse_path_applies(q, k, wide_v)
    out, h = attention_with_entropy(q, k, wide_v)
    assert_close("dim_v != dim H", h_ref, h, 1e-10)
    assert_close("dim_v != dim out", out_ref, out, 1e-10)
