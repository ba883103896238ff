import pytest
import torch
from masked_diffusion import CosineSchedule, LogLinearSchedule
from meld_diffusion.reference import element_weight
from meld_diffusion.schedule import ElementwiseSchedule

from shared_core.testing import assert_close


def _rates(b: int = 3, n: int = 7) -> torch.Tensor:
    return torch.exp(
        torch.randn(b, n, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    )


@pytest.mark.parametrize("base", [LogLinearSchedule(eps=0.0), CosineSchedule(eps=0.0)])
def test_mask_prob_monotone_zero_at_0_one_at_1(base):
    s = ElementwiseSchedule(base)
    w = _rates()
    ts = torch.linspace(0, 1, 101, dtype=torch.float64)
    p = torch.stack([s.mask_prob(t.expand(3), w) for t in ts])  # (T, b, n)
    assert torch.all(p[1:] >= p[:-1])
    assert torch.all(p[0] == 0)
    assert torch.allclose(p[-1], torch.ones_like(p[-1]), atol=1e-12)


def test_eps_bounds_the_mask_prob_at_t1():
    s = ElementwiseSchedule(LogLinearSchedule(eps=1e-3))
    p = s.mask_prob(torch.ones(3, dtype=torch.float64), _rates())
    assert torch.allclose(p, torch.full_like(p, 1 - 1e-3))


def test_unit_rates_equal_the_base_schedule_bit_for_bit():
    base = LogLinearSchedule()
    s = ElementwiseSchedule(base)
    t = torch.rand(64, generator=torch.Generator().manual_seed(1)) * 0.999 + 1e-3
    w = torch.ones(64, 5)
    assert torch.equal(s.mask_prob(t, w), base.mask_prob(t)[:, None].expand(64, 5))
    assert torch.equal(s.weight(t, w), base.weight(t)[:, None].expand(64, 5))
    assert torch.equal(s.alpha(t, w), base.alpha(t)[:, None].expand(64, 5))


@pytest.mark.parametrize("base", [LogLinearSchedule(), CosineSchedule()])
def test_weight_matches_the_chain_rule_reference(base):
    s = ElementwiseSchedule(base)
    w = _rates(2, 4)
    t = torch.tensor([0.3, 0.85], dtype=torch.float64)
    ref = torch.tensor(
        [[element_weight(base, float(t[i]), float(w[i, j])) for j in range(4)] for i in range(2)],
        dtype=torch.float64,
    )
    assert_close("weight", ref, s.weight(t, w), 1e-10)


def test_weight_is_the_derivative_of_log_mask_prob():
    # -alpha'/(1 - alpha) = d/dt log(1 - alpha): check by autograd
    s = ElementwiseSchedule(LogLinearSchedule())
    w = _rates(2, 4)
    t = torch.tensor([0.2, 0.7], dtype=torch.float64, requires_grad=True)
    grads = torch.stack(
        [torch.autograd.grad(s.mask_prob(t, w)[:, j].log().sum(), t)[0] for j in range(4)], 1
    )
    assert_close("dlogp/dt", grads, s.weight(t.detach(), w), 1e-10)


def test_unmask_prob_is_a_probability():
    s = ElementwiseSchedule(LogLinearSchedule())
    w = _rates()
    p = s.unmask_prob(
        torch.full((3,), 0.6, dtype=torch.float64), torch.full((3,), 0.4, dtype=torch.float64), w
    )
    assert torch.all((p >= 0) & (p <= 1))


def test_errors_name_the_argument():
    s = ElementwiseSchedule()
    t = torch.rand(3)
    with pytest.raises(ValueError, match="w: rates must be > 0"):
        s.mask_prob(t, torch.zeros(3, 2))
    with pytest.raises(ValueError, match=r"w: expected shape \(3, elements\)"):
        s.mask_prob(t, torch.ones(2, 2))
    with pytest.raises(TypeError, match="w: expected a floating"):
        s.mask_prob(t, torch.ones(3, 2, dtype=torch.long))
    with pytest.raises(TypeError, match="t: expected a"):
        s.mask_prob(0.5, torch.ones(3, 2))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="base: expected a masked_diffusion.Schedule"):
        ElementwiseSchedule("loglinear")  # type: ignore[arg-type]


def test_weight_stays_finite_when_the_warped_time_underflows():
    """Large rates at small t: t^w underflows in float32, the weight w / t must not be NaN."""
    s = ElementwiseSchedule(LogLinearSchedule(eps=1e-4))
    t = torch.tensor([1e-3, 0.5])
    w = torch.tensor([[40.0, 1.0], [200.0, 3.0]])
    w.requires_grad_(True)
    got = s.weight(t, w)
    assert torch.isfinite(got).all()
    assert_close("w / t", (w / t[:, None]).double(), got.detach().double(), 1e-6)
    got.sum().backward()
    assert torch.isfinite(w.grad).all()


def test_unmask_prob_closed_form_matches_the_ratio_and_survives_large_rates():
    s = ElementwiseSchedule(LogLinearSchedule(eps=1e-4))
    t, u = (
        torch.tensor([0.9, 0.5], dtype=torch.float64),
        torch.tensor([0.6, 0.0], dtype=torch.float64),
    )
    w = torch.tensor([[0.3, 1.0, 4.0], [2.0, 0.7, 9.0]], dtype=torch.float64)
    a_t, a_s = s.alpha(t, w), s.alpha(u, w)
    assert_close("unmask", (a_s - a_t) / (1 - a_t), s.unmask_prob(t, u, w), 1e-12)
    big = s.unmask_prob(torch.tensor([0.02]), torch.tensor([0.01]), torch.tensor([[300.0]]))
    assert torch.isfinite(big).all() and 0.0 <= float(big) <= 1.0
