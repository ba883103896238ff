"""The TDC scan: stable at length 4096 where the public closed form is not; the layer is zero at init."""

from __future__ import annotations

import pytest
import torch
from free_energy_mixer import reference as R
from free_energy_mixer.tdc import TimeDecayCondition, decay_scan

from shared_core.testing import assert_close


def _scan_inputs(T: int, dtype: torch.dtype = torch.float64):
    g = torch.Generator().manual_seed(0)
    a = -torch.nn.functional.softplus(torch.randn(2, T, 6, generator=g, dtype=dtype) + 1.0)
    u = torch.randn(2, T, 6, generator=g, dtype=dtype)
    return a, u


def test_scan_equals_sequential_loop_at_4096() -> None:
    a, u = _scan_inputs(4096)
    h, last = decay_scan(a, u)
    ref = R.decay_scan_loop(a, u)
    assert_close("scan T=4096", ref, h, 1e-12)
    assert_close("final state", ref[:, -1], last, 1e-12)


def test_public_closed_form_breaks_at_4096() -> None:
    """Why the scan exists: exp(cumsum a) underflows and the closed form loses the sequence."""
    a, u = _scan_inputs(4096)
    ref = R.decay_scan_loop(a, u)
    public = R.decay_scan_public(a, u)
    bad = ~torch.isfinite(public) | ((public - ref).abs() > 1e-3)
    assert bad.float().mean() > 0.5


@pytest.mark.parametrize(
    ("dtype", "ratio"), [(torch.float64, 1e-10), (torch.float32, 1e-5), (torch.bfloat16, 2e-2)]
)
def test_scan_dtypes(device: str, dtype: torch.dtype, ratio: float) -> None:
    a, u = _scan_inputs(300)
    ref = R.decay_scan_loop(a, u)
    h, _ = decay_scan(a.to(device, dtype), u.to(device, dtype), chunk_size=16)
    assert_close(f"scan {dtype}", ref, h, ratio)


def test_scan_with_state_continues() -> None:
    a, u = _scan_inputs(100)
    full, _ = decay_scan(a, u, chunk_size=8)
    h1, s1 = decay_scan(a[:, :37], u[:, :37], chunk_size=8)
    h2, _ = decay_scan(a[:, 37:], u[:, 37:], chunk_size=8, state=s1)
    assert_close("split scan", full, torch.cat([h1, h2], 1), 1e-12)


def test_scan_gradcheck() -> None:
    a, u = _scan_inputs(11)
    a = a[:1, :, :2].clone().requires_grad_(True)
    u = u[:1, :, :2].clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, u: decay_scan(a, u, chunk_size=4)[0], (a, u))


def test_tdc_is_zero_at_init() -> None:
    tdc = TimeDecayCondition(16, 10, hidden=8)
    s, _ = tdc(torch.randn(2, 9, 16))
    assert s.shape == (2, 9, 10) and (s == 0).all()


def test_scan_bad_inputs() -> None:
    a, u = _scan_inputs(10)
    with pytest.raises(ValueError, match="u: expected a non-empty tensor"):
        decay_scan(a[0], u[0])
    with pytest.raises(ValueError, match="log_decay: expected the shape of u"):
        decay_scan(a[:, :5], u)
    with pytest.raises(ValueError, match="state: expected shape"):
        decay_scan(a, u, state=torch.zeros(2, 5))
    with pytest.raises(ValueError, match="chunk_size: expected a positive int"):
        decay_scan(a, u, chunk_size=0)
