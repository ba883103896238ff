"""The fused C++ attention-with-entropy kernel (`toprovar.fused`) against the naive oracle,
and the fallback where it cannot be built."""

from __future__ import annotations

import math
import resource
import shutil
import time
import warnings

import pytest
import torch
from toprovar import entropy, fused, reference
from toprovar.entropy import attention_with_entropy

from shared_core.testing import assert_close

TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-5}


def _compiler() -> str | None:
    from torch.utils.cpp_extension import get_cxx_compiler

    return shutil.which(get_cxx_compiler())


@pytest.fixture(scope="module")
def op():
    """The compiled op; skipped (reason stated) only where no C++ compiler exists. With a
    compiler, a failed build is a test failure."""
    if not fused.enabled():
        pytest.skip("TOPROVAR_FUSED=0: the fused kernel is turned off")
    if _compiler() is None:
        pytest.skip("no C++ compiler on PATH: the fused kernel cannot be built here")

    def cpu() -> float:  # this process and its finished children (the compiler)
        own, kids = (
            resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        )
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    start = cpu(), time.perf_counter()
    compiled = fused.load(warn=False)
    assert compiled is not None, f"the fused kernel did not build: {fused.error()}"
    print(
        f"fused kernel load (compile on a cold cache): {time.perf_counter() - start[1]:.1f} s "
        f"wall, {cpu() - start[0]:.1f} s CPU"
    )
    return compiled


def _inputs(b, h, nq, nk, d, dv, seed=0, spread=2.0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, nq, d, generator=g, dtype=torch.float64) * spread
    k = torch.randn(b, h, nk, d, generator=g, dtype=torch.float64)
    v = torch.randn(b, h, nk, dv, generator=g, dtype=torch.float64)
    return q, k, v


# small, one key block, several key blocks of 512 (with a ragged last one), dim_v != dim,
# n_q >= 768 (query blocks of 256) and n_q < 192 (query blocks of 32)
SHAPES = [
    (2, 3, 37, 5, 8, 8),
    (1, 2, 1, 1, 4, 4),
    (2, 4, 256, 256, 64, 64),
    (1, 2, 300, 1100, 64, 32),
    (1, 1, 800, 530, 16, 24),
    (1, 1, 3, 700, 16, 16),
]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_fused_kernel_matches_naive(op, dtype, shape):
    q, k, v = _inputs(*shape)
    out_ref, h_ref = reference.attention_entropy(q, k, v)
    lse_ref = torch.logsumexp(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), -1)
    out, h, lse = op(q.to(dtype), k.to(dtype), v.to(dtype), 1.0 / math.sqrt(q.shape[-1]))
    assert out.dtype == h.dtype == lse.dtype == dtype
    assert_close(f"fused H {dtype}", h_ref, h, TOLERANCE[dtype])
    assert_close(f"fused out {dtype}", out_ref, out, TOLERANCE[dtype])
    assert_close(f"fused lse {dtype}", lse_ref, lse, TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_fused_kernel_rescales_when_a_later_key_block_holds_the_max(op, dtype):
    """The running max rises in the second and third key blocks (512 keys each): the
    accumulators' rescaling (Z, the moment's shift by (m - m') Z, the output) is exercised,
    including a near one-hot row (entropy ~ 0) and a uniform row (entropy log n)."""
    q, k, v = _inputs(1, 1, 4, 1300, 16, 16, seed=2)
    k[..., 600, :] = q[..., 0, :] * 3  # query 0 peaks in block 2
    k[..., 1200, :] = q[..., 1, :] * 30  # query 1: nearly one-hot in block 3
    q[..., 2, :] = 0  # query 2: uniform
    out_ref, h_ref = reference.attention_entropy(q, k, v)
    out, h, _ = op(q.to(dtype), k.to(dtype), v.to(dtype), 0.25)
    assert_close("rescaled H", h_ref, h, TOLERANCE[dtype], atol=1e-6)
    assert_close("rescaled out", out_ref, out, TOLERANCE[dtype])
    assert abs(float(h[0, 0, 2]) - math.log(1300)) < 1e-5
    assert float(h[0, 0, 1]) < 1e-3


def test_default_path_is_the_fused_kernel(op, monkeypatch):
    """``attention_with_entropy(method="sdpa")`` on CPU float32/float64 without a mask returns
    the fused kernel's results bit for bit; with a mask it keeps the torch path."""
    q, k, v = _inputs(2, 2, 40, 60, 16, 16)
    out, h = attention_with_entropy(q, k, v)
    ref = op(q, k, v, 0.25)
    assert torch.equal(out, ref[0]) and h is not None and torch.equal(h, ref[1])
    mask = torch.ones(40, 60, dtype=torch.bool)
    assert not fused.applies(q, k, v, mask)
    calls = []
    lse_entropy = entropy._lse_entropy
    monkeypatch.setattr(entropy, "_lse_entropy", lambda *a: calls.append(1) or lse_entropy(*a))
    out_m, h_m = attention_with_entropy(q, k, v, mask=mask)
    assert h_m is not None and calls == ([1] if entropy._FLASH_LSE is not None else [])
    assert_close("masked path H", h, h_m, 1e-10)
    assert_close("masked path out", out, out_m, 1e-10)


def test_gradients_keep_the_torch_path(op):
    """The kernel has no backward: with inputs that need gradients the torch path runs (and
    the output's gradient flows)."""
    q, k, v = (t.requires_grad_() for t in _inputs(1, 1, 9, 11, 8, 8))
    assert not fused.applies(q, k, v, None)
    out, h = attention_with_entropy(q, k, v)
    assert h is not None
    out.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()


def test_build_failure_warns_once_and_falls_back(monkeypatch):
    """A failed build (here: a missing source file) warns once, naming the cause, and the
    default path still gives the oracle's values; ``TOPROVAR_FUSED=0`` skips the build."""
    monkeypatch.setenv("TOPROVAR_FUSED", "1")
    monkeypatch.setattr(fused, "_state", {})
    monkeypatch.setattr(fused, "NAME", "toprovar_fused_missing")
    monkeypatch.setattr(fused, "SOURCE", fused.SOURCE.with_name("missing.cpp"))
    q, k, v = _inputs(1, 2, 10, 12, 8, 8)
    out_ref, h_ref = reference.attention_entropy(q, k, v)
    with pytest.warns(RuntimeWarning, match="could not be built"):
        out, h = attention_with_entropy(q, k, v)
    assert fused.error() is not None
    assert_close("fallback H", h_ref, h, 1e-10)
    assert_close("fallback out", out_ref, out, 1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        attention_with_entropy(q, k, v)  # the failure is remembered: no second warning
    monkeypatch.setattr(fused, "_state", {})
    monkeypatch.setenv("TOPROVAR_FUSED", "0")
    assert fused.load() is None and fused.error() is None


def test_the_lse_path_still_runs_where_the_kernel_is_off(monkeypatch):
    """``TOPROVAR_FUSED=0``: the default is the flash-lse path of 0.2.1 again."""
    monkeypatch.setenv("TOPROVAR_FUSED", "0")
    q, k, v = _inputs(1, 2, 20, 30, 8, 8)
    out, h = attention_with_entropy(q, k, v)
    out_l, h_l = entropy._lse_entropy(q, k, v, None) if entropy._FLASH_LSE else (out, h)
    assert torch.equal(out, out_l) and h is not None and torch.equal(h, h_l)
