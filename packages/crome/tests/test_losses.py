import math

import pytest
import torch
from crome import reference
from crome.losses import LOG2, bradley_terry_loss, crome_loss, tie_loss
from hypothesis import given, settings
from hypothesis import strategies as st

floats = st.floats(-40, 40, allow_nan=False)


@given(st.lists(floats, min_size=1, max_size=20))
@settings(max_examples=50, deadline=None)
def test_bradley_terry_matches_closed_form_and_gradient(values):
    d = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    loss = bradley_terry_loss(d)
    for got, v in zip(loss.tolist(), values, strict=True):
        assert got == pytest.approx(reference.bradley_terry_loss(v), rel=1e-9, abs=1e-12)
    loss.sum().backward()
    for g, v in zip(d.grad.tolist(), values, strict=True):
        assert g == pytest.approx(reference.bradley_terry_grad(v), rel=1e-9, abs=1e-12)


@given(st.lists(floats, min_size=1, max_size=20))
@settings(max_examples=50, deadline=None)
def test_tie_loss_matches_closed_form_and_gradient(values):
    d = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    loss = tie_loss(d)
    for got, v in zip(loss.tolist(), values, strict=True):
        assert got == pytest.approx(reference.tie_loss(v), rel=1e-9, abs=1e-12)
    loss.sum().backward()
    for g, v in zip(d.grad.tolist(), values, strict=True):
        assert g == pytest.approx(reference.tie_grad(v), rel=1e-9, abs=1e-12)


def test_tie_loss_is_minimised_at_equal_rewards():
    grid = torch.linspace(-5, 5, 1001, dtype=torch.float64)
    values = tie_loss(grid)
    assert grid[values.argmin()].item() == pytest.approx(0.0, abs=1e-12)
    assert values.min().item() == pytest.approx(LOG2, rel=1e-12)
    # symmetric in the order of the two answers, strictly larger away from 0
    assert torch.allclose(tie_loss(grid), tie_loss(-grid))
    assert (values[grid.abs() > 0.01] > LOG2).all()
    d = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    tie_loss(d).sum().backward()
    assert d.grad.item() == 0.0


def test_bt_limits():
    d = torch.tensor([-1000.0, 0.0, 1000.0])
    out = bradley_terry_loss(d)
    assert torch.isfinite(out).all()
    assert out[0].item() == pytest.approx(1000.0)
    assert out[1].item() == pytest.approx(math.log(2))
    assert out[2].item() == pytest.approx(0.0, abs=1e-12)


@given(
    st.lists(floats, min_size=0, max_size=8),
    st.lists(floats, min_size=0, max_size=8),
    st.floats(0, 5),
)
@settings(max_examples=50, deadline=None)
def test_crome_loss_matches_reference(pref, tie, lam):
    if not pref and not tie:
        return
    dp = torch.tensor(pref, dtype=torch.float64)
    dt = torch.tensor(tie, dtype=torch.float64)
    for reduction in ("mean", "sum"):
        got = crome_loss(dp, dt, lam=lam, reduction=reduction).item()
        want = reference.crome_loss(pref, tie, lam=lam, reduction=reduction)
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9)


def test_loss_errors_name_the_argument():
    with pytest.raises(ValueError, match="delta"):
        bradley_terry_loss(torch.tensor([float("nan")]))
    with pytest.raises(ValueError, match="shape"):
        tie_loss(torch.zeros(2, 2))
    with pytest.raises(TypeError, match="floating"):
        tie_loss(torch.zeros(2, dtype=torch.long))
    with pytest.raises(TypeError, match="delta"):
        bradley_terry_loss([0.0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lam"):
        crome_loss(torch.zeros(1), torch.zeros(1), lam=-1.0)
    with pytest.raises(ValueError, match="both are empty"):
        crome_loss(torch.zeros(0), torch.zeros(0))
    with pytest.raises(ValueError, match="reduction"):
        crome_loss(torch.zeros(1), torch.zeros(0), reduction="max")
