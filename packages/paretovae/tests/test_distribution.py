"""SymPareto: normalisation, the sampler's law, limits, moments, entropy, argument checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from paretovae import SymPareto
from paretovae.reference import integrate_density, sympareto_logpdf
from scipy import integrate, stats

from shared_core.testing import assert_close

F64 = torch.float64


def _t(v):
    return torch.tensor(v, dtype=F64)


def _sp(loc, scale, nu, **kw):
    return SymPareto(torch.tensor(loc, dtype=F64), torch.tensor(scale, dtype=F64), nu, **kw)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("nu", [0.7, 3.0])
def test_density_integrates_to_one_radially(n: int, nu: float) -> None:
    # int f(||u||_1) du = int_0^inf f(r) 2^n r^{n-1} / (n-1)! dr (surface of the l1 sphere)
    d = _sp([0.0] * n, [1.0] * n, nu)

    def radial(r: float) -> float:
        x = torch.tensor([r] + [0.0] * (n - 1), dtype=F64)
        return math.exp(float(d.log_prob(x))) * 2**n * r ** (n - 1) / math.factorial(n - 1)

    total = integrate.quad(radial, 0, np.inf, limit=200, epsabs=1e-12, epsrel=1e-11)[0]
    assert abs(total - 1.0) < 1e-8


@pytest.mark.parametrize("n", [1, 2])
def test_density_integrates_to_one_directly(n: int) -> None:
    mu, sigma, nu = [0.4, -1.0][:n], [0.6, 2.0][:n], 1.5
    total = integrate_density(lambda x: sympareto_logpdf(x, mu, sigma, nu), mu, sigma)
    assert abs(total - 1.0) < 1e-7


def test_log_prob_matches_reference_formula() -> None:
    gen = torch.Generator().manual_seed(0)
    loc = torch.randn(4, 3, generator=gen, dtype=F64)
    scale = torch.rand(4, 3, generator=gen, dtype=F64) + 0.3
    x = torch.randn(4, 3, generator=gen, dtype=F64) * 3
    got = SymPareto(loc, scale, 2.5).log_prob(x)
    ref = [
        sympareto_logpdf(x[i].tolist(), loc[i].tolist(), scale[i].tolist(), 2.5) for i in range(4)
    ]
    assert_close("log_prob", torch.tensor(ref, dtype=F64), got, 1e-12)


def _lomax_signed_cdf(nu: float):
    def cdf(t: np.ndarray) -> np.ndarray:
        tail = 0.5 * (1.0 + np.abs(t) / nu) ** (-nu)
        return np.where(t >= 0, 1.0 - tail, tail)

    return cdf


def test_1d_sampler_follows_two_sided_lomax() -> None:
    torch.manual_seed(0)
    nu = 2.5
    x = _sp([0.0], [1.0], nu).sample((20_000,))[:, 0].numpy()
    assert stats.kstest(x, _lomax_signed_cdf(nu)).pvalue > 1e-3
    # the survival of |x| is the Lomax (1 + t/nu)^{-nu}, checked at a far point too
    t = 20.0
    assert abs((np.abs(x) > t).mean() - (1 + t / nu) ** (-nu)) < 4 * math.sqrt(
        (1 + t / nu) ** (-nu) / 20_000
    )


def test_marginal_of_3d_sample_is_the_1d_law() -> None:
    torch.manual_seed(1)
    nu = 1.7
    x = _sp([0.0, 0.0, 0.0], [1.0, 1.0, 1.0], nu).sample((20_000,))[:, 0].numpy()
    assert stats.kstest(x, _lomax_signed_cdf(nu)).pvalue > 1e-3
    wrong = stats.kstest(x, _lomax_signed_cdf(nu + 1.5)).pvalue
    assert wrong < 1e-6  # the test has power: another nu is rejected


def test_large_nu_is_product_laplace() -> None:
    gen = torch.Generator().manual_seed(2)
    loc, scale = (
        torch.randn(5, 4, generator=gen, dtype=F64),
        torch.rand(5, 4, generator=gen, dtype=F64) + 0.5,
    )
    x = torch.randn(5, 4, generator=gen, dtype=F64) * 2
    lap = torch.distributions.Laplace(loc, scale).log_prob(x).sum(-1)
    assert_close("log_prob nu=1e8", lap, SymPareto(loc, scale, 1e8).log_prob(x), 1e-6)
    lap_h = torch.distributions.Laplace(loc, scale).entropy().sum(-1)
    assert_close("entropy nu=1e8", lap_h, SymPareto(loc, scale, 1e8).entropy(), 1e-6)


def test_entropy_matches_monte_carlo() -> None:
    torch.manual_seed(3)
    d = _sp([0.5, -0.5], [0.7, 1.9], 4.0)
    x = d.sample((200_000,))
    mc = -d.log_prob(x).mean()
    se = d.log_prob(x).std() / math.sqrt(len(x))
    assert abs(float(mc - d.entropy())) < 4 * float(se)


def test_mean_and_variance_match_samples_and_are_nan_inf_for_small_nu() -> None:
    torch.manual_seed(4)
    d = _sp([1.0, -2.0], [0.5, 2.0], 6.0)
    x = d.sample((200_000,))
    assert torch.allclose(x.mean(0), d.mean, atol=0.02)
    assert torch.allclose(x.var(0), d.variance, rtol=0.08)
    assert torch.allclose(d.variance, torch.tensor([0.25, 4.0], dtype=F64) * 2 * 36 / (5 * 4))
    # as torch's StudentT: mean nan for nu <= 1; variance inf for 1 < nu <= 2, nan for nu <= 1
    d = SymPareto(
        torch.zeros(4, 2, dtype=F64), torch.ones(4, 2, dtype=F64), _t([0.5, 1.0, 2.0, 3.0])
    )
    st = torch.distributions.StudentT(_t([0.5, 1.0, 2.0, 3.0]), 0.0, 1.0)
    assert torch.equal(d.mean.isnan(), st.mean.isnan().unsqueeze(-1).expand(4, 2))
    assert d.mean.isnan()[:2].all() and bool((d.mean[2:] == 0).all())
    assert d.variance.isnan()[:2].all() and d.variance[2].isinf().all()
    assert torch.equal(d.variance.isinf(), st.variance.isinf().unsqueeze(-1).expand(4, 2))
    assert float(d.variance[3, 0]) == pytest.approx(2 * 9 / 2)
    assert _sp([0.0], [1.0], 0.5).mode.item() == 0.0


def test_rsample_gradient_matches_score_function() -> None:
    # d/dtheta E[f(x)] by reparameterisation vs by the score function, f(x) = sum tanh(x)^2 + x
    torch.manual_seed(5)
    loc = torch.tensor([0.3, -0.2], dtype=F64, requires_grad=True)
    scale = torch.tensor([0.8, 1.3], dtype=F64, requires_grad=True)

    def f(x: torch.Tensor) -> torch.Tensor:
        return (torch.tanh(x) ** 2 + 0.5 * torch.tanh(x)).sum(-1)

    d = SymPareto(loc, scale, 3.0)
    g_rep = torch.autograd.grad(f(d.rsample((400_000,))).mean(), (loc, scale))
    x = d.sample((400_000,))
    fx = f(x)
    surrogate = ((fx - fx.mean()) * d.log_prob(x)).mean()  # baseline-subtracted score estimator
    g_sf = torch.autograd.grad(surrogate, (loc, scale))
    for a, b in zip(g_rep, g_sf, strict=True):
        assert torch.allclose(a, b, atol=0.01), (a, b)


def test_rsample_gradient_flows_to_nu() -> None:
    nu = torch.tensor(3.0, dtype=F64, requires_grad=True)
    x = SymPareto(torch.zeros(2, dtype=F64), torch.ones(2, dtype=F64), nu).rsample((64,))
    (g,) = torch.autograd.grad(x.abs().sum(), nu)
    assert torch.isfinite(g)


def test_shapes_and_expand() -> None:
    d = SymPareto(torch.zeros(3, 2), torch.ones(3, 2), torch.tensor([1.0, 2.0, 3.0]))
    assert d.batch_shape == (3,) and d.event_shape == (2,)
    assert d.sample((5,)).shape == (5, 3, 2)
    assert d.log_prob(torch.zeros(5, 3, 2)).shape == (5, 3)
    e = d.expand((4, 3))
    assert e.sample().shape == (4, 3, 2) and e.log_prob(torch.zeros(4, 3, 2)).shape == (4, 3)
    assert "SymPareto(n=2" in repr(d)


def test_validate_args_like_torch() -> None:
    with pytest.raises(ValueError, match="scale"):
        SymPareto(torch.zeros(2), -torch.ones(2), 2.0, validate_args=True)
    with pytest.raises(ValueError, match="nu"):
        SymPareto(torch.zeros(2), torch.ones(2), 0.0, validate_args=True)
    with pytest.raises(ValueError, match="nu"):
        SymPareto(torch.zeros(2), torch.ones(2), -1.0, validate_args=True)
    with pytest.raises(ValueError, match="loc"):
        SymPareto(torch.tensor([0.0, float("nan")]), torch.ones(2), 2.0, validate_args=True)
    d = SymPareto(torch.zeros(2), torch.ones(2), 2.0, validate_args=True)
    with pytest.raises(ValueError, match="support"):
        d.log_prob(torch.tensor([0.0, float("nan")]))
    # torch's own behaviour for comparison: the same checks, the same exception type
    with pytest.raises(ValueError):
        torch.distributions.StudentT(0.0, torch.tensor(1.0), -1.0, validate_args=True)
    # validate_args=False skips the checks, as torch does
    SymPareto(torch.zeros(2), -torch.ones(2), 2.0, validate_args=False)


def test_bad_arguments_raise() -> None:
    with pytest.raises(TypeError, match="loc: expected a torch.Tensor"):
        SymPareto([0.0], torch.ones(1), 2.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="scale: expected a torch.Tensor or a float"):
        SymPareto(torch.zeros(1), "1", 2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"loc, scale: shapes \(3,\) and \(2,\) do not broadcast"):
        SymPareto(torch.zeros(3), torch.ones(2), 2.0)
    with pytest.raises(ValueError, match="loc: expected shape"):
        SymPareto(torch.tensor(0.0), torch.tensor(1.0), 2.0)
    with pytest.raises(ValueError, match="nu: expected a scalar or a tensor broadcastable"):
        SymPareto(torch.zeros(3, 2), torch.ones(3, 2), torch.ones(4, 3))
    with pytest.raises(ValueError, match="nu: shape"):
        SymPareto(torch.zeros(3, 2), torch.ones(3, 2), torch.ones(4))


def test_fast_path_on_device(device: str) -> None:
    # float32 on `device` against the float64 CPU computation
    gen = torch.Generator().manual_seed(6)
    loc, scale = (
        torch.randn(64, 8, generator=gen, dtype=F64),
        torch.rand(64, 8, generator=gen, dtype=F64) + 0.2,
    )
    x = torch.randn(64, 8, generator=gen, dtype=F64) * 4
    ref = SymPareto(loc, scale, 3.0).log_prob(x)
    fast = SymPareto(loc.to(device, torch.float32), scale.to(device, torch.float32), 3.0).log_prob(
        x.to(device, torch.float32)
    )
    assert_close("log_prob float32", ref, fast, 1e-5)
    torch.manual_seed(0)
    s = SymPareto(loc.to(device, torch.float32), scale.to(device, torch.float32), 3.0).rsample(
        (10,)
    )
    assert s.shape == (10, 64, 8) and bool(torch.isfinite(s).all())


def test_python_floats_like_torch_families() -> None:
    d = SymPareto(0.5, 2.0, 3.0)  # a 1-D law, as StudentT(3.0, 0.5, 2.0) is a scalar law
    assert d.event_shape == (1,) and d.batch_shape == () and d.sample((7,)).shape == (7, 1)
    assert float(d.log_prob(torch.tensor([0.5]))) == pytest.approx(math.log(0.5 / 2.0))
    e = SymPareto(1.0, torch.ones(4, 3, dtype=F64), 2.0)  # a float loc broadcasts to scale
    assert e.event_shape == (3,) and e.batch_shape == (4,) and e.loc.dtype == F64
    assert bool((e.loc == 1.0).all())
    f = SymPareto(torch.zeros(2, dtype=F64), 0.5, 2.0)
    assert torch.equal(f.scale, torch.full((2,), 0.5, dtype=F64))


def test_cdf_and_icdf_in_one_dimension() -> None:
    loc, scale, nu = _t([[0.3], [-1.0]]), _t([[0.7], [2.0]]), _t([2.5, 0.8])
    d = SymPareto(loc, scale, nu)
    x = _t([[-3.0, -1.0], [0.3, 5.0], [40.0, -0.5]]).unsqueeze(-1)  # (3, 2, 1): sample, batch
    got = d.cdf(x)
    assert got.shape == (3, 2)
    for i in range(3):
        for j in range(2):
            mu, s, v = float(loc[j, 0]), float(scale[j, 0]), float(nu[j])

            def pdf(t: float, mu=mu, s=s, v=v) -> float:
                return math.exp(sympareto_logpdf([t], [mu], [s], v))

            ref = integrate.quad(pdf, -np.inf, mu)[0] + math.copysign(
                integrate.quad(pdf, *sorted((mu, float(x[i, j, 0]))))[0], float(x[i, j, 0]) - mu
            )
            assert float(got[i, j]) == pytest.approx(ref, abs=1e-7)
    p = _t([[1e-6, 0.2], [0.5, 0.999]])
    q = d.icdf(p)
    assert q.shape == (2, 2, 1) and float(q[1, 0, 0]) == pytest.approx(0.3)
    assert_close("cdf(icdf(p))", p, d.cdf(q), 1e-12)
    assert_close("icdf(cdf(x))", x, d.icdf(d.cdf(x)), 1e-9)
    assert torch.isinf(d.icdf(_t([0.0, 1.0]))).all()
    with pytest.raises(NotImplementedError, match="cdf: closed form only for a 1-D"):
        _sp([0.0, 0.0], [1.0, 1.0], 2.0).cdf(torch.zeros(2, dtype=F64))
    with pytest.raises(NotImplementedError, match="icdf"):
        _sp([0.0, 0.0], [1.0, 1.0], 2.0).icdf(_t(0.5))
    with pytest.raises(ValueError, match=r"value: expected probabilities in \[0, 1\]"):
        SymPareto(0.0, 1.0, 2.0, validate_args=True).icdf(torch.tensor(1.5))


def test_cdf_icdf_float32_on_device(device: str) -> None:
    d64 = _sp([[0.3], [-1.0]], [[0.7], [2.0]], 3.0)
    d32 = SymPareto(d64.loc.float().to(device), d64.scale.float().to(device), 3.0)
    x = _t([[-3.0, 4.0], [0.1, -2.0]]).unsqueeze(-1)
    assert_close("cdf float32", d64.cdf(x), d32.cdf(x.float().to(device)).cpu().double(), 1e-6)
    p = _t([[0.01, 0.7], [0.5, 0.93]])
    q32 = d32.icdf(p.float().to(device)).cpu().double()
    assert_close("icdf float32", d64.icdf(p), q32, 1e-5, atol=1e-6)
