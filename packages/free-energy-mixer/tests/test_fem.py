"""The free-energy read: its closed form, its properties, and the fast one-call form against it."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from free_energy_mixer import reference as R
from free_energy_mixer.fem import clip_values, combine, free_energy_read
from free_energy_mixer.priors import gla_prior, linear_prior, softmax_prior
from scipy.special import logsumexp

from shared_core.testing import assert_close

B, H, T, DK, DV = 2, 3, 19, 8, 5


@pytest.fixture
def qkv() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(B, H, T, DK, generator=g, dtype=torch.float64)
    k = torch.randn(B, H, T, DK, generator=g, dtype=torch.float64)
    v = torch.randn(B, H, T, DV, generator=g, dtype=torch.float64)
    log_decay = -torch.rand(B, H, T, generator=g, dtype=torch.float64)
    return q, k, v, log_decay


def _priors(log_decay: torch.Tensor) -> dict[str, tuple]:
    """name -> (fast prior, dense reference matrix builder)."""
    return {
        "softmax": (softmax_prior, R.softmax_prior_matrix),
        "linear": (linear_prior, R.linear_prior_matrix),
        "gla": (
            gla_prior(log_decay, chunk_size=8),
            lambda q, k: R.linear_prior_matrix(q, k, log_decay),
        ),
    }


def test_reference_matches_scipy_logsumexp() -> None:
    rng = np.random.default_rng(1)
    n = 11
    p = rng.dirichlet(np.ones(n))
    v = rng.normal(size=(n, 3)) * 3
    beta = np.array([0.3, 1.0, 4.0])
    P = torch.zeros(1, 1, n, n, dtype=torch.float64)
    P[0, 0, -1] = torch.from_numpy(p)  # the last query reads with prior p
    V = torch.from_numpy(v)[None, None]
    F = R.free_energy_reference(P, V, torch.from_numpy(beta)[None])[0, 0, -1].numpy()
    for j in range(3):
        expect = logsumexp(beta[j] * v[:, j], b=p) / beta[j]
        assert abs(F[j] - expect) <= 1e-10 * max(1.0, abs(expect))


def test_fast_read_matches_scipy_on_random_prior(qkv) -> None:
    """F of the one-call read == scipy's logsumexp(beta v, b=p) / beta, float64, 1e-10."""
    q, k, v, _ = qkv
    beta = torch.rand(H, DV, dtype=torch.float64) * 3 + 0.1
    _, F = free_energy_read(softmax_prior, q, k, v, beta)
    P = R.softmax_prior_matrix(q, k).numpy()
    vn, bn = v.numpy(), beta.numpy()
    for b_ in range(B):
        for h in range(H):
            for t in (0, 5, T - 1):
                p = P[b_, h, t, : t + 1]
                for j in range(DV):
                    expect = logsumexp(bn[h, j] * vn[b_, h, : t + 1, j], b=p) / bn[h, j]
                    assert abs(float(F[b_, h, t, j]) - expect) <= 1e-10 * max(1.0, abs(expect))


def test_gibbs_variational_form(qkv) -> None:
    """F = max_q E_q[v] - KL(q || p) / beta, attained at q ~ p exp(beta v)."""
    q, k, v, _ = qkv
    beta = torch.rand(H, DV, dtype=torch.float64) + 0.5
    P = R.softmax_prior_matrix(q, k)
    assert_close("gibbs", R.free_energy_reference(P, v, beta), R.gibbs_value(P, v, beta), 1e-12)


@pytest.mark.parametrize("name", ["softmax", "linear", "gla"])
@pytest.mark.parametrize(
    ("dtype", "ratio"), [(torch.float64, 1e-10), (torch.float32, 1e-5), (torch.bfloat16, 2e-2)]
)
def test_fast_read_against_reference(
    qkv, device: str, name: str, dtype: torch.dtype, ratio: float
) -> None:
    q, k, v, log_decay = qkv
    beta = torch.rand(H, DV, dtype=torch.float64) * 2 + 0.2
    fast_prior, matrix = _priors(log_decay)[name]
    P = matrix(q, k)
    mu_ref, F_ref = R.mean_read(P, v), R.free_energy_reference(P, v, beta)
    dev = [t.to(device, dtype) for t in (q, k, v)]
    if name == "gla":
        fast_prior = gla_prior(log_decay.to(device, dtype), chunk_size=8)
    mu, F = free_energy_read(fast_prior, *dev, beta.to(device, dtype))
    assert mu.dtype == dtype and F.dtype == dtype
    assert_close(f"{name} mu {dtype}", mu_ref, mu, ratio)
    assert_close(f"{name} F {dtype}", F_ref, F, ratio)


def test_lambda_zero_is_the_base_read(qkv) -> None:
    q, k, v, log_decay = qkv
    beta = torch.full((H, DV), 1.953, dtype=torch.float64)
    for name, (prior, _) in _priors(log_decay).items():
        mu, F = free_energy_read(prior, q, k, v, beta)
        out = combine(mu, F, torch.zeros_like(mu))
        assert_close(f"{name} lambda=0", prior(q, k, v), out, 1e-12)


def test_small_beta_tends_to_mean(qkv) -> None:
    q, k, v, _ = qkv
    errs = []
    for b in (1e-1, 1e-2, 1e-3):
        mu, F = free_energy_read(
            softmax_prior, q, k, v, torch.full((H, DV), b, dtype=torch.float64)
        )
        errs.append(float((F - mu).abs().max()))
    assert errs[2] < 2e-3 and errs[0] > errs[1] > errs[2]  # F - mu = O(beta Var/2)


def test_bounds_mean_le_F_le_max(qkv) -> None:
    q, k, v, log_decay = qkv
    beta = torch.rand(H, DV, dtype=torch.float64) * 5 + 0.05
    vmax = v.cummax(dim=2).values  # max over the support i <= t (every p_t(i) > 0 here)
    for name, (prior, _) in _priors(log_decay).items():
        mu, F = free_energy_read(prior, q, k, v, beta)
        assert (mu - 1e-12 <= F).all(), name
        assert (vmax + 1e-12 >= F).all(), name
        assert (F - mu).max() > 1e-3  # not trivially equal


def test_F_non_decreasing_in_beta(qkv) -> None:
    q, k, v, _ = qkv
    Fs = [
        free_energy_read(softmax_prior, q, k, v, torch.full((H, DV), b, dtype=torch.float64))[1]
        for b in (0.1, 0.5, 1.0, 2.0, 8.0)
    ]
    for a, b in itertools.pairwise(Fs):
        assert (b >= a - 1e-12).all()


def test_shift_equivariance(qkv) -> None:
    q, k, v, _ = qkv
    beta = torch.rand(H, DV, dtype=torch.float64) + 0.5
    _, F = free_energy_read(softmax_prior, q, k, v, beta)
    _, Fc = free_energy_read(softmax_prior, q, k, v + 2.5, beta)
    assert_close("F(v + c) - c", F, Fc - 2.5, 1e-12)


def test_clipping_bounds_beta_v() -> None:
    v = torch.tensor([-100.0, -1.0, 0.0, 3.0, 100.0], dtype=torch.float64).view(1, 1, 5, 1)
    beta = torch.tensor([[2.0]], dtype=torch.float64)
    vc = clip_values(v, beta, 40.0)
    assert vc.flatten().tolist() == [-20.0, -1.0, 0.0, 3.0, 20.0]


def test_huge_values_stay_finite_in_bfloat16() -> None:
    g = torch.Generator().manual_seed(3)
    q, k = (torch.randn(1, 2, 64, 8, generator=g).bfloat16() for _ in range(2))
    v = (torch.randn(1, 2, 64, 4, generator=g) * 1e4).bfloat16()
    mu, F = free_energy_read(softmax_prior, q, k, v, torch.full((2, 4), 1.953).bfloat16())
    assert torch.isfinite(mu).all() and torch.isfinite(F).all()
    assert (F.float() <= 40 / 1.953 + 0.2).all()


def test_float16_reads_in_float32() -> None:
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 1, 16, 4, generator=g, dtype=torch.float64) for _ in range(3))
    beta = torch.full((1, 4), 2.0, dtype=torch.float64)
    _, F_ref = free_energy_read(softmax_prior, q, k, v, beta)
    _, F16 = free_energy_read(softmax_prior, q.half(), k.half(), v.half(), beta.half())
    assert F16.dtype == torch.float16
    assert_close("float16 F", F_ref, F16, 5e-3)


@pytest.mark.parametrize("name", ["softmax", "linear", "gla"])
def test_gradcheck(name: str) -> None:
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, 1, 6, 4, generator=g, dtype=torch.float64) for _ in range(3))
    a = -torch.rand(1, 1, 6, generator=g, dtype=torch.float64)
    theta = torch.randn(1, 4, generator=g, dtype=torch.float64)
    for t in (q, k, v, a, theta):
        t.requires_grad_(True)

    def f(q, k, v, a, theta):
        prior = {"softmax": softmax_prior, "linear": linear_prior}.get(name) or gla_prior(a, 4)
        beta = torch.nn.functional.softplus(theta) + 1e-6
        mu, F = free_energy_read(prior, q, k, v, beta)
        return mu, F

    assert torch.autograd.gradcheck(f, (q, k, v, a, theta), eps=1e-6, atol=1e-6)


def test_scalar_beta_is_one_temperature_for_every_channel() -> None:
    g = torch.Generator().manual_seed(1)
    q, k = (torch.randn(1, 2, 5, 4, generator=g) for _ in range(2))
    v = torch.randn(1, 2, 5, 3, generator=g)
    full = free_energy_read(softmax_prior, q, k, v, torch.full((2, 3), 2.5))
    for beta in (2.5, torch.tensor(2.5)):
        got = free_energy_read(softmax_prior, q, k, v, beta)
        assert all(torch.equal(a, b) for a, b in zip(got, full, strict=True))
    with pytest.raises(ValueError, match="beta: expected finite inverse temperatures > 0"):
        free_energy_read(softmax_prior, q, k, v, -1.0)


def test_bad_inputs() -> None:
    q = torch.randn(1, 2, 5, 4)
    v = torch.randn(1, 2, 5, 3)
    beta = torch.ones(2, 3)
    with pytest.raises(ValueError, match="v: expected shape"):
        free_energy_read(softmax_prior, q, q, v[0], beta)
    with pytest.raises(ValueError, match="beta: expected shape"):
        free_energy_read(softmax_prior, q, q, v, torch.ones(3))
    with pytest.raises(ValueError, match="beta: expected finite inverse temperatures > 0"):
        free_energy_read(softmax_prior, q, q, v, torch.zeros(2, 3))
    with pytest.raises(ValueError, match="beta: expected finite"):
        free_energy_read(softmax_prior, q, q, v, torch.full((2, 3), math.nan))
    with pytest.raises(ValueError, match="v: contains NaN"):
        free_energy_read(softmax_prior, q, q, v.clone().fill_(math.inf), beta)
    with pytest.raises(ValueError, match="q: shape"):
        free_energy_read(softmax_prior, q[:, :, :4], q[:, :, :4], v, beta)
    with pytest.raises(TypeError, match="k: dtype"):
        free_energy_read(softmax_prior, q, q.double(), v, beta)
    with pytest.raises(TypeError, match="q: expected a floating dtype"):
        free_energy_read(softmax_prior, q.long(), q.long(), v, beta)
    with pytest.raises(ValueError, match="cap: expected a finite number > 0"):
        free_energy_read(softmax_prior, q, q, v, beta, cap=0.0)
    with pytest.raises(ValueError, match="v: expected a non-empty"):
        free_energy_read(softmax_prior, q[:, :, :0], q[:, :, :0], v[:, :, :0], beta)
    with pytest.raises(ValueError, match="prior: expected a read of shape"):
        free_energy_read(lambda q, k, x: x[..., :1], q, q, v, beta)
