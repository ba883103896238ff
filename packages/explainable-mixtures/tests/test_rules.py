"""The differentiable rules: limits, invariances, penalties and the float64 loop oracle."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from explainable_mixtures import reference
from explainable_mixtures.rules import (
    coverage_penalty,
    log_conditional_weights,
    log_rule_activation,
    log_soft_condition,
    marginal_weights,
    overlap_penalty,
)

from shared_core.testing import assert_close

RATIOS = {torch.float64: 1e-10, torch.float32: 1e-5, torch.bfloat16: 2e-2}


def _rules(k=3, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    centre = torch.rand(k, d, generator=g, dtype=torch.float64)
    half = 0.1 + 0.3 * torch.rand(k, d, generator=g, dtype=torch.float64)
    a = 0.2 + torch.rand(k, d, generator=g, dtype=torch.float64)
    x = torch.rand(50, d, generator=g, dtype=torch.float64)
    return x, centre - half, centre + half, a


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("tau", [0.3, 0.05])
def test_activation_matches_loop_oracle(device, dtype, tau):
    x, alpha, beta, a = _rules()
    a[1, 2] = 0.0  # a dropped feature
    ref = torch.tensor(
        [
            [
                math.log(
                    reference.rule_activation(
                        xn.tolist(), al.tolist(), be.tolist(), ai.tolist(), tau
                    )
                )
                for al, be, ai in zip(alpha, beta, a, strict=True)
            ]
            for xn in x
        ],
        dtype=torch.float64,
    )
    to = {"device": device, "dtype": dtype}
    fast = log_rule_activation(
        log_soft_condition(x.to(**to), alpha.to(**to), beta.to(**to), tau), a.to(**to)
    )
    assert fast.dtype == dtype
    # bfloat16 rounds the inputs: compare with the oracle on the rounded inputs
    assert_close("log e", ref, fast.double().cpu(), RATIOS[dtype])


def test_hard_limit_is_the_and_of_indicators():
    x, alpha, beta, a = _rules(k=4, d=3, seed=1)
    inside = ((x[:, None] >= alpha) & (x[:, None] <= beta)).all(-1).double()
    e = torch.exp(log_rule_activation(log_soft_condition(x, alpha, beta, 1e-6), a))
    margin = torch.minimum((x[:, None] - alpha).abs(), (beta - x[:, None]).abs()).min(-1).values
    clear = margin > 1e-3  # points not on a boundary
    assert clear.float().mean() > 0.9
    assert torch.allclose(e[clear], inside[clear], atol=1e-12)
    # one condition: pi is the interval's indicator
    pi = torch.exp(log_soft_condition(x, alpha, beta, 1e-6))
    ind = ((x[:, None] >= alpha) & (x[:, None] <= beta)).double()
    on_edge = torch.minimum((x[:, None] - alpha).abs(), (beta - x[:, None]).abs()) < 1e-3
    assert torch.allclose(pi[~on_edge], ind[~on_edge], atol=1e-12)


def test_zero_weight_drops_the_feature():
    x, alpha, beta, a = _rules(k=2, d=3, seed=2)
    a[:, 1] = 0.0
    x2 = x.clone()
    x2[:, 1] = (
        torch.rand(len(x), generator=torch.Generator().manual_seed(9), dtype=torch.float64) * 50
    )
    e1 = log_rule_activation(log_soft_condition(x, alpha, beta, 0.1), a)
    e2 = log_rule_activation(log_soft_condition(x2, alpha, beta, 0.1), a)
    assert torch.equal(e1, e2)
    # with the weight back, the activation does depend on x_1
    a[:, 1] = 1.0
    e3 = log_rule_activation(log_soft_condition(x2, alpha, beta, 0.1), a)
    assert not torch.allclose(e2, e3)


def test_empty_box_gives_no_activation_and_no_gradient():
    x, alpha, beta, a = _rules(k=1, d=2, seed=3)
    alpha = torch.tensor([[0.8, 0.0]], dtype=torch.float64, requires_grad=True)
    beta = torch.tensor([[0.2, 1.0]], dtype=torch.float64, requires_grad=True)  # alpha_0 > beta_0
    log_e = log_rule_activation(log_soft_condition(x, alpha, beta, 0.01), a)
    assert torch.exp(log_e).max() < 1e-12
    torch.exp(log_e).sum().backward()
    assert alpha.grad.abs().max() < 1e-10 and beta.grad.abs().max() < 1e-10


def test_overlap_penalty_bounds_and_one_hot():
    k = 5
    g = torch.Generator().manual_seed(0)
    log_w = torch.log_softmax(torch.randn(40, k, generator=g, dtype=torch.float64), -1)
    R = overlap_penalty(log_w)
    assert 0 < R <= 1 - 1 / k
    uniform = torch.full((7, k), -math.log(k), dtype=torch.float64)
    assert overlap_penalty(uniform) == pytest.approx(1 - 1 / k, abs=1e-12)
    one_hot = torch.log(torch.eye(k, dtype=torch.float64)[torch.arange(12) % k])
    assert overlap_penalty(one_hot) == 0.0


def test_coverage_penalty_is_zero_iff_covered():
    log_e = torch.log(torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.6]], dtype=torch.float64))
    assert coverage_penalty(log_e) == 0.0
    uncovered = torch.log(torch.tensor([[0.1, 0.2]], dtype=torch.float64))
    assert coverage_penalty(uncovered) == pytest.approx(-math.log(0.3))


def test_permuting_rules_permutes_weights():
    x, alpha, beta, a = _rules(k=4, d=3, seed=4)
    log_w = log_conditional_weights(log_rule_activation(log_soft_condition(x, alpha, beta, 0.2), a))
    for perm in itertools.islice(itertools.permutations(range(4)), 5):
        p = list(perm)
        log_wp = log_conditional_weights(
            log_rule_activation(log_soft_condition(x, alpha[p], beta[p], 0.2), a[p])
        )
        assert torch.allclose(log_wp, log_w[:, p], atol=1e-14)
        assert overlap_penalty(log_wp) == pytest.approx(float(overlap_penalty(log_w)), abs=1e-14)


def test_marginal_weights_are_normalised_mean_activations():
    x, alpha, beta, a = _rules(k=3, d=2, seed=5)
    log_e = log_rule_activation(log_soft_condition(x, alpha, beta, 0.2), a)
    e = torch.exp(log_e)
    expected = e.mean(0) / e.mean(0).sum()
    assert torch.allclose(marginal_weights(log_e), expected, atol=1e-14)
