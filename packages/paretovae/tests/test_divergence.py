"""The closed-form gamma-power divergence against quadrature, its properties and its limits."""

from __future__ import annotations

import math

import pytest
import torch
from paretovae import (
    SymPareto,
    expected_abs_shift,
    gamma_power_divergence,
    sympareto_gamma,
    sympareto_gamma_divergence,
    sympareto_shift_bound,
    sympareto_shift_slope,
)
from paretovae.reference import (
    gamma_power_divergence_quad,
    kl_quad,
    laplace_logpdf,
    sympareto_logpdf,
)
from scipy import integrate

from shared_core.testing import assert_close

F64 = torch.float64


def _t(v):
    return torch.tensor(v, dtype=F64)


@pytest.mark.parametrize(
    ("mq", "sq", "mp", "sp", "nu"),
    [
        ([0.3], [0.7], [-0.2], [1.3], 2.5),
        ([2.0], [0.5], [0.0], [1.0], 1.5),
        ([0.3, -1.0], [0.7, 1.5], [-0.2, 0.4], [1.3, 0.6], 3.0),
    ],
)
def test_closed_form_equals_quadrature(mq, sq, mp, sp, nu) -> None:
    closed = float(sympareto_gamma_divergence(_t(mq), _t(sq), _t(mp), _t(sp), nu))
    quad = gamma_power_divergence_quad(
        lambda x: sympareto_logpdf(x, mq, sq, nu),
        lambda x: sympareto_logpdf(x, mp, sp, nu),
        sympareto_gamma(nu, len(mq)),
        mq,
        sq,
    )
    assert abs(closed - quad) < 1e-6 * max(1.0, abs(quad))


def test_expected_abs_shift_equals_quadrature() -> None:
    for a, s, nu in [(0.0, 1.0, 2.0), (1.5, 0.4, 1.5), (-3.0, 2.0, 5.0)]:
        d = SymPareto(_t([0.0]), _t([1.0]), nu)

        def integrand(t: float, a=a, s=s, d=d) -> float:
            return abs(a + s * t) * math.exp(float(d.log_prob(_t([t]))))

        quad = sum(
            integrate.quad(integrand, lo, hi, limit=200)[0]
            for lo, hi in ((-math.inf, 0), (0, math.inf))
        )
        assert abs(float(expected_abs_shift(_t(a), _t(s), nu)) - quad) < 1e-7


def test_zero_on_equal_laws_and_nonnegative() -> None:
    gen = torch.Generator().manual_seed(0)
    mu = torch.randn(200, 3, generator=gen, dtype=F64) * 2
    sig = torch.rand(200, 3, generator=gen, dtype=F64) * 3 + 0.1
    for nu in (1.2, 4.0, 30.0):
        assert float(sympareto_gamma_divergence(mu, sig, mu, sig, nu).abs().max()) < 1e-10
        mu2 = torch.randn(200, 3, generator=gen, dtype=F64) * 2
        sig2 = torch.rand(200, 3, generator=gen, dtype=F64) * 3 + 0.1
        assert float(sympareto_gamma_divergence(mu, sig, mu2, sig2, nu).min()) > 0.0


def test_shift_bound_holds_on_random_parameters() -> None:
    gen = torch.Generator().manual_seed(1)
    for nu in (1.1, 2.0, 7.0):
        mu_q, mu_p = (torch.randn(500, 2, generator=gen, dtype=F64) * 3 for _ in range(2))
        s_q, s_p = (torch.rand(500, 2, generator=gen, dtype=F64) * 2 + 0.05 for _ in range(2))
        d = sympareto_gamma_divergence(mu_q, s_q, mu_p, s_p, nu)
        bound = sympareto_shift_bound(mu_q, s_q, mu_p, s_p, nu)
        assert bool((bound >= d - 1e-12).all())
        # tight at zero shift
        same = sympareto_shift_bound(mu_p, s_q, mu_p, s_p, nu)
        assert_close(
            "bound at zero shift", sympareto_gamma_divergence(mu_p, s_q, mu_p, s_p, nu), same, 1e-12
        )


def test_tends_to_laplace_kl_as_nu_grows() -> None:
    mq, sq, mp, sp = [0.4, -0.3], [0.6, 1.4], [0.0, 0.2], [1.0, 0.8]
    kl_closed = sum(
        math.log(b2 / b1) + abs(m1 - m2) / b2 + b1 / b2 * math.exp(-abs(m1 - m2) / b1) - 1
        for m1, b1, m2, b2 in zip(mq, sq, mp, sp, strict=True)
    )
    # the oracle itself against the closed Laplace KL (one coordinate: the KL of a product adds)
    kl_num = kl_quad(
        lambda x: laplace_logpdf(x, mq[:1], sq[:1]),
        lambda x: laplace_logpdf(x, mp[:1], sp[:1]),
        mq[:1],
        sq[:1],
    )
    kl_first = (
        math.log(sp[0] / sq[0])
        + abs(mq[0] - mp[0]) / sp[0]
        + sq[0] / sp[0] * math.exp(-abs(mq[0] - mp[0]) / sq[0])
        - 1
    )
    assert abs(kl_first - kl_num) < 1e-7
    errs = [
        abs(float(sympareto_gamma_divergence(_t(mq), _t(sq), _t(mp), _t(sp), nu)) - kl_closed)
        for nu in (10.0, 100.0, 1e4)
    ]
    assert errs[0] > errs[1] > errs[2] and errs[2] < 1e-3


def test_distribution_objects_and_checks() -> None:
    q = SymPareto(_t([[0.1, 0.2]]), _t([[1.0, 0.5]]), 3.0)
    p = SymPareto(_t([[0.0, 0.0]]), _t([[1.0, 1.0]]), 3.0)
    assert_close(
        "objects",
        sympareto_gamma_divergence(q.loc, q.scale, p.loc, p.scale, 3.0),
        gamma_power_divergence(q, p),
        1e-14,
    )
    with pytest.raises(ValueError, match="one common nu"):
        gamma_power_divergence(q, SymPareto(p.loc, p.scale, 4.0))
    with pytest.raises(TypeError, match="two SymPareto"):
        gamma_power_divergence(q, torch.distributions.Laplace(0.0, 1.0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="event shape"):
        gamma_power_divergence(q, SymPareto(_t([[0.0]]), _t([[1.0]]), 3.0))
    with pytest.raises(ValueError, match=r"nu: expected a finite value > 1"):
        sympareto_gamma_divergence(q.loc, q.scale, p.loc, p.scale, 1.0)
    with pytest.raises(ValueError, match="sigma_p: expected every entry > 0"):
        sympareto_gamma_divergence(q.loc, q.scale, p.loc, -p.scale, 3.0)
    with pytest.raises(ValueError, match="mu_q: contains NaN"):
        sympareto_gamma_divergence(q.loc * math.nan, q.scale, p.loc, p.scale, 3.0)
    with pytest.raises(TypeError, match="nu: expected a float"):
        sympareto_gamma_divergence(q.loc, q.scale, p.loc, p.scale, "3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="d: expected a positive int"):
        sympareto_gamma(3.0, 0)
    with pytest.raises(ValueError, match="gamma: expected a value in"):
        gamma_power_divergence_quad(lambda x: 0.0, lambda x: 0.0, 0.5, [0.0], [1.0])


def test_differentiable_in_float32() -> None:
    mu = torch.zeros(4, 3, requires_grad=True)
    sig = torch.ones(4, 3, requires_grad=True)
    d = sympareto_gamma_divergence(mu + 0.1, sig * 1.5, torch.zeros(4, 3), torch.ones(4, 3), 6.0)
    d.sum().backward()
    assert (
        mu.grad is not None and bool(torch.isfinite(mu.grad).all()) and float(d.detach().min()) > 0
    )


def test_shift_slope_is_the_bound_slope_and_tight_far_out() -> None:
    # Theorem 2.1's beta for p = P_1(0, tau, nu): D(shift 60) - D(shift 30) ~ 30 beta (quadrature)
    nu, sq, tau = 6.0, 0.7, 1.3
    beta = sympareto_shift_slope(nu, 1, tau)

    def quad(shift: float) -> float:
        return gamma_power_divergence_quad(
            lambda x: sympareto_logpdf(x, [shift], [sq], nu),
            lambda x: sympareto_logpdf(x, [0.0], [tau], nu),
            sympareto_gamma(nu, 1),
            [shift],
            [sq],
        )

    assert (quad(60.0) - quad(30.0)) / 30.0 == pytest.approx(beta, rel=1e-4)
    # the bound's right-hand side is the centred divergence plus beta ||mu_q - mu_p||_1 (d = 2)
    mq, sq2, sp = _t([[0.5, -2.0]]), _t([[0.7, 1.4]]), _t([[1.3, 1.3]])
    bound = sympareto_shift_bound(mq, sq2, 0 * mq, sp, 3.0)
    centred = sympareto_gamma_divergence(0 * mq, sq2, 0 * mq, sp, 3.0)
    assert float(bound - centred) == pytest.approx(sympareto_shift_slope(3.0, 2, 1.3) * 2.5)
    assert sympareto_shift_slope(1e7, 3, 2.0) == pytest.approx(0.5, rel=1e-5)  # -> 1 / tau
    with pytest.raises(ValueError, match="nu: expected a finite value > 1"):
        sympareto_shift_slope(1.0, 2)
    with pytest.raises(ValueError, match="d: expected a positive int"):
        sympareto_shift_slope(3.0, 0)
    with pytest.raises(ValueError, match="tau: expected a finite value > 0"):
        sympareto_shift_slope(3.0, 2, float("nan"))
