import math

import pytest
import torch
from masked_diffusion import CosineSchedule, LogLinearSchedule, get_schedule


@pytest.mark.parametrize("name", ["loglinear", "cosine"])
def test_endpoints_and_derivative(name):
    s = get_schedule(name, eps=1e-3)
    t = torch.linspace(0.05, 0.95, 19, dtype=torch.float64)
    assert float(s.alpha(torch.tensor([0.0], dtype=torch.float64))) == pytest.approx(1.0)
    assert float(s.alpha(torch.tensor([1.0], dtype=torch.float64))) == pytest.approx(
        1e-3, abs=1e-12
    )
    h = 1e-6
    fd = (s.alpha(t + h) - s.alpha(t - h)) / (2 * h)
    torch.testing.assert_close(s.dalpha(t), fd, rtol=1e-6, atol=1e-8)
    torch.testing.assert_close(s.weight(t), -s.dalpha(t) / (1 - s.alpha(t)))
    assert (s.weight(t) > 0).all()


def test_loglinear_weight_is_one_over_t():
    t = torch.rand(50, dtype=torch.float64) * 0.99 + 0.01
    s = LogLinearSchedule()
    torch.testing.assert_close(-s.dalpha(t) / (1 - s.alpha(t)), 1 / t)


def test_cosine_unmask_prob_to_zero_is_one():
    s = CosineSchedule()
    t = torch.tensor([0.3, 0.9])
    torch.testing.assert_close(s.unmask_prob(t, torch.zeros(2)), torch.ones(2))


def test_bad_input():
    with pytest.raises(ValueError, match="name"):
        get_schedule("quadratic")
    with pytest.raises(ValueError, match="eps"):
        LogLinearSchedule(eps=1.5)
    with pytest.raises(ValueError, match="t"):
        LogLinearSchedule().alpha(torch.tensor([math.nan]))
    with pytest.raises(TypeError, match="t"):
        LogLinearSchedule().alpha(torch.tensor([1]))
