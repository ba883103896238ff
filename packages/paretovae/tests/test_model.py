"""The five VAE families: losses, the nu -> inf limit to LaplaceVAE, t3VAE's constants, sampling."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from paretovae.divergence import sympareto_gamma_divergence, sympareto_shift_slope
from paretovae.experiments.common import train_config
from paretovae.model import FAMILIES, HeavyTailVAE, InputScaleError, VAEConfig

from shared_core.testing import assert_close
from shared_core.train import fit


def _pair(family_a: str, family_b: str, nu: float, n: int = 3, m: int = 2, objective="exact"):
    # the exact shifted divergence (beta = 0) is the one whose nu -> inf limit is the KL itself
    torch.manual_seed(0)
    a = HeavyTailVAE(
        VAEConfig(family=family_a, n=n, m=m, hidden=16, nu=nu, objective=objective)
    ).double()
    b = HeavyTailVAE(VAEConfig(family=family_b, n=n, m=m, hidden=16, nu=nu)).double()
    b.load_state_dict(a.state_dict())
    return a, b


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_trains_a_step(family: str) -> None:
    torch.manual_seed(1)
    model = HeavyTailVAE(VAEConfig(family=family, n=5, m=2, hidden=16))
    x = torch.randn(32, 5)
    loss, parts = model.loss(x)
    loss.backward()
    assert math.isfinite(float(loss.detach())) and set(parts) == {"recon", "reg"}
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and bool(torch.isfinite(g).all()) for g in grads)
    assert model.reconstruct(x).shape == (32, 5)
    s = model.sample(100)
    assert s.shape == (100, 5) and bool(torch.isfinite(s).all())
    assert model.sample(3, decoder_noise=False).shape == (3, 5)
    torch.manual_seed(7)
    through_forward = model(x).detach()
    torch.manual_seed(7)
    assert torch.equal(through_forward, model.loss(x)[0].detach())  # forward is the loss


def test_pareto_sympareto_tends_to_laplace_vae() -> None:
    # same weights, same Laplace noise Z (drawn first), W/nu -> 1, D_gamma -> KL(Laplace)
    x = torch.randn(64, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    gaps = []
    for nu in (10.0, 1e3, 1e7):
        pareto, laplace = _pair("pareto-sympareto", "laplace", nu)
        torch.manual_seed(3)
        lp, pp = pareto.loss(x)
        torch.manual_seed(3)
        ll, pl = laplace.loss(x)
        gaps.append(abs(float((lp - ll).detach())) / abs(float(ll.detach())))
        assert pp["reg"] > 0 and pl["reg"] > 0
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-3


def test_pareto_t_tends_to_gaussian_decoder_with_laplace_latent() -> None:
    # the t decoder's recon term is the Gaussian one; its regulariser tends to the Laplace KL
    x = torch.randn(16, 3, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    pareto, laplace = _pair("pareto-t", "laplace", 1e7)
    mu, log_scale = pareto.encode(x)
    assert torch.allclose(
        pareto.regulariser(mu, log_scale), laplace.regulariser(mu, log_scale), rtol=1e-4
    )
    vae = HeavyTailVAE(VAEConfig(family="vae", n=3, m=2, hidden=16)).double()
    assert torch.allclose(pareto.recon_term(x, 0 * x), vae.recon_term(x, 0 * x))


def test_gamma_and_encoder_index_follow_the_paper() -> None:
    c = VAEConfig(family="pareto-t", n=10, m=3, nu=4.0)
    assert c.encoder_nu == 4.0 + 5.0 and c.gamma == pytest.approx(-2 / (2 * 4 + 2 * 3 + 10))
    c = VAEConfig(family="pareto-sympareto", n=10, m=3, nu=4.0)
    assert c.encoder_nu == 14.0 and c.gamma == pytest.approx(-1 / (4 + 3 + 10))
    assert VAEConfig(family="t3vae", n=10, m=3, nu=4.0).gamma == pytest.approx(-2 / 17)
    assert VAEConfig(family="vae").gamma == 0.0 and math.isinf(
        VAEConfig(family="laplace").encoder_nu
    )


def test_t3vae_constants_match_the_public_code() -> None:
    # Mincheol2/t3VAE synthetic_data_analyses/models/t3VAE.py __init__, written out again
    nu, n, m, s = 5.0, 2, 1, 1.3
    model = HeavyTailVAE(VAEConfig(family="t3vae", n=n, m=m, nu=nu, recon_sigma=s))
    g = -2 / (nu + n + m)
    log_t = (
        math.lgamma((nu + n) / 2) - math.lgamma(nu / 2) - n / 2 * (math.log(nu) + math.log(math.pi))
    )
    base = -n * math.log(s) + log_t - math.log(nu + n - 2) + math.log(nu - 2)
    assert model.t3_const == pytest.approx((1 + m / (nu + n - 2)) * math.exp(-g / (1 + g) * base))
    assert model.t3_tau == pytest.approx(math.exp(2 / (nu + n - 2) * base))
    # its encoder: mu + sqrt(nu/(nu+n)) sigma eps sqrt((nu+n)/v): variance nu/(nu+n) (nu+n)/(nu+n-2) sigma^2
    torch.manual_seed(5)
    z = model.posterior_sample(torch.zeros(100_000, 1), torch.zeros(100_000, 1))
    assert float(z.var()) == pytest.approx(nu / (nu + n - 2), rel=0.05)


def test_regularisers_vanish_at_the_prior() -> None:
    mu, log_scale = torch.zeros(4, 2, dtype=torch.float64), torch.zeros(4, 2, dtype=torch.float64)
    for family in ("vae", "laplace", "pareto-t", "pareto-sympareto"):
        for objective in ("centred", "exact"):
            model = HeavyTailVAE(VAEConfig(family=family, n=3, m=2, objective=objective)).double()
            assert float(model.regulariser(mu, log_scale).abs().max()) < 1e-9, family


def test_bad_configuration_and_inputs_raise() -> None:
    with pytest.raises(ValueError, match="family: expected one of"):
        VAEConfig(family="gauss")
    with pytest.raises(ValueError, match="n: expected a positive int"):
        VAEConfig(n=0)
    with pytest.raises(ValueError, match="nu: expected a finite value > 2"):
        VAEConfig(family="t3vae", nu=2.0)
    with pytest.raises(ValueError, match="nu: expected a finite value > 0"):
        VAEConfig(nu=-1.0)
    with pytest.raises(ValueError, match="encoder index"):
        VAEConfig(family="pareto-t", n=1, nu=0.3)
    with pytest.raises(ValueError, match="alpha"):
        VAEConfig(alpha=0.0)
    with pytest.raises(ValueError, match="beta: expected a finite value >= 0"):
        VAEConfig(beta=-1.0)
    with pytest.raises(ValueError, match="beta: expected a finite value >= 0, got nan"):
        VAEConfig(beta=float("nan"))
    with pytest.raises(ValueError, match="nu: expected a finite value > 0, got nan"):
        VAEConfig(nu=float("nan"))
    with pytest.raises(ValueError, match="tau"):
        VAEConfig(tau=float("nan"))
    with pytest.raises(ValueError, match="tau: expected a finite value > 0, got -1.0"):
        VAEConfig(tau=-1.0)
    with pytest.raises(ValueError, match="objective: expected one of"):
        VAEConfig(objective="bound")
    with pytest.raises(ValueError, match="t_dof: expected one of"):
        VAEConfig(t_dof="2nu")
    with pytest.raises(TypeError, match="recon_sigma: expected a float"):
        VAEConfig(recon_sigma="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="config: expected a VAEConfig"):
        HeavyTailVAE({"family": "vae"})  # type: ignore[arg-type]
    model = HeavyTailVAE(VAEConfig(n=3))
    with pytest.raises(ValueError, match=r"x: expected shape \(batch, n=3\)"):
        model.loss(torch.zeros(4, 2))
    with pytest.raises(TypeError, match="x: expected a floating-point"):
        model.loss(torch.zeros(4, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"x: expected shape \(batch, n=3\) with batch >= 1"):
        model.loss(torch.zeros(0, 3))
    with pytest.raises(ValueError, match="x: contains NaN"):
        model.loss(torch.tensor([[0.0, float("nan"), 1.0]]))
    with pytest.raises(ValueError, match="num: expected a positive int"):
        model.sample(0)


def test_beta_adds_the_l1_mean_penalty() -> None:
    mu = torch.tensor([[1.0, -2.0]], dtype=torch.float64)
    log_scale = torch.zeros(1, 2, dtype=torch.float64)
    a = HeavyTailVAE(VAEConfig(family="pareto-t", n=3, m=2, beta=0.0, alpha=2.0)).double()
    b = HeavyTailVAE(VAEConfig(family="pareto-t", n=3, m=2, beta=0.5, alpha=2.0)).double()
    diff = b.regulariser(mu, log_scale) - a.regulariser(mu, log_scale)
    assert float(diff) == pytest.approx(2.0 * 0.5 * 3.0)


def test_centred_objective_with_theorem_beta_is_the_default() -> None:
    c = VAEConfig(family="pareto-sympareto", n=3, m=2, nu=4.0, tau=1.3, alpha=0.7)
    assert c.objective == "centred" and c.beta is None and c.t_dof == "joint"
    assert c.l1_weight == pytest.approx(sympareto_shift_slope(c.encoder_nu, 2, 1.3))
    assert VAEConfig(family="pareto-t", objective="exact").l1_weight == 0.0
    assert VAEConfig(family="pareto-t", beta=0.25).l1_weight == 0.25
    model = HeavyTailVAE(c).double()
    g = torch.Generator().manual_seed(6)
    mu = 2 * torch.randn(200, 2, generator=g, dtype=torch.float64)
    log_scale = 0.5 * torch.randn(200, 2, generator=g, dtype=torch.float64)
    sigma, tau = log_scale.exp(), torch.full_like(mu, 1.3)
    # recon + alpha D_g(q_{phi,0} || p_alt) + alpha beta ||mu||_1 (paper note, Loss & Training)
    centred = sympareto_gamma_divergence(0 * mu, sigma, 0 * mu, tau, c.encoder_nu)
    expected = 0.7 * (centred + c.l1_weight * mu.abs().sum(-1))
    assert_close("centred regulariser", expected, model.regulariser(mu, log_scale), 1e-12)
    # with Theorem 2.1's beta it is an upper bound of the exact divergence term, tight at mu = 0
    exact = HeavyTailVAE(dataclasses.replace(c, objective="exact")).double()
    gap = model.regulariser(mu, log_scale) - exact.regulariser(mu, log_scale)
    assert float(gap.min()) > 0
    at_zero = model.regulariser(0 * mu, log_scale) - exact.regulariser(0 * mu, log_scale)
    assert float(at_zero.abs().max()) < 1e-12


def test_centred_objective_tends_to_the_laplace_bound() -> None:
    # nu -> inf: D_g(q_0 || p_alt) -> KL(Laplace(0, s) || Laplace(0, tau)), beta -> 1 / tau
    mu = torch.tensor([[0.4, -1.5], [0.0, 2.0]], dtype=torch.float64)
    log_scale = torch.tensor([[0.3, -0.2], [0.1, 0.0]], dtype=torch.float64)
    s, tau = log_scale.exp(), 1.5
    limit = (math.log(tau) - log_scale + s / tau - 1.0 + mu.abs() / tau).sum(-1)
    gaps = []
    for nu in (10.0, 1e3, 1e6):
        cfg = VAEConfig(family="pareto-sympareto", n=3, m=2, nu=nu, tau=tau)
        reg = HeavyTailVAE(cfg).double().regulariser(mu, log_scale)
        gaps.append(float((reg - limit).abs().max()))
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-4


def test_regulariser_float32_on_device_matches_float64(device: str) -> None:
    g = torch.Generator().manual_seed(8)
    mu, log_scale = torch.randn(64, 3, generator=g), 0.3 * torch.randn(64, 3, generator=g)
    for family in ("pareto-t", "pareto-sympareto"):
        for objective in ("centred", "exact"):
            cfg = VAEConfig(family=family, n=5, m=3, objective=objective, tau=0.8)
            model = HeavyTailVAE(cfg)
            want = model.double().regulariser(mu.double(), log_scale.double())
            got = model.float().to(device).regulariser(mu.to(device), log_scale.to(device))
            assert_close(f"{family} {objective}", want, got.cpu().double(), 1e-5, atol=1e-6)


def test_t_decoder_dof_options() -> None:
    assert VAEConfig(family="pareto-t", nu=5.0, m=3).t_decoder_dof == 16.0  # 2(nu + m)
    assert VAEConfig(family="pareto-t", nu=5.0, m=3, t_dof="nu+m").t_decoder_dof == 8.0
    # the decoder noise: with mu_theta = 0 and the prior draw's spread divided out, x is
    # s t_dof; nu + m = 3 dof has a heavier tail than 2(nu + m) = 6 (P(|t| > 4) 2.8% vs 0.7%)
    tails = {}
    for t_dof in ("joint", "nu+m"):
        model = HeavyTailVAE(VAEConfig(family="pareto-t", n=4, m=1, nu=2.0, t_dof=t_dof))
        for p in model.decoder.parameters():
            torch.nn.init.zeros_(p)
        torch.manual_seed(9)
        x = model.sample(20_000)
        tails[t_dof] = float((x.abs() > 4 * 1.5).float().mean())
    assert tails["nu+m"] > 2 * tails["joint"]


def _sparse_world(num: int = 2000, n: int = 8, k: int = 2, active: float = 0.3) -> torch.Tensor:
    """x = s A + 0.05 noise, s_j = Laplace(0, 1) with probability `active`, else 0."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(k, n, generator=g)
    lap = torch.distributions.Laplace(0.0, 1.0).sample((num, k))
    s = lap * (torch.rand(num, k, generator=g) < active)
    return s @ a + 0.05 * torch.randn(num, n, generator=g)


def test_l1_term_gives_sparser_encoder_means_on_a_planted_sparse_world() -> None:
    # the issue's acceptance test: beta > 0 (Theorem 2.1's, the default) vs beta = 0, centred
    torch.manual_seed(0)
    x = _sparse_world()
    frac, err = {}, {}
    for beta in (0.0, None):
        torch.manual_seed(0)
        model = HeavyTailVAE(
            VAEConfig(family="pareto-t", n=8, m=4, hidden=32, beta=beta, recon_sigma=0.3)
        )

        def batch(step: int) -> torch.Tensor:
            return x[
                torch.randint(0, len(x), (128,), generator=torch.Generator().manual_seed(step))
            ]

        fit(model, lambda m, b: m.loss(b), batch, train_config(300), show_progress=False)
        xd = x.to(next(model.parameters()).device)  # fit trains on the session's device
        mu, _ = model.encode(xd)
        frac[beta] = float((mu.abs() < 1e-3).float().mean())
        err[beta] = float((model.reconstruct(xd) - xd).pow(2).mean() / xd.var(0).mean())
    assert frac[None] > 0.03 and frac[0.0] < 0.005, frac
    assert frac[None] > 10 * frac[0.0]
    assert err[None] < 0.5, err  # sparse, not collapsed: half the variance still explained


@pytest.mark.parametrize("family", ["pareto-t", "pareto-sympareto"])
def test_raw_counts_in_the_thousands_raise_a_clear_error_not_a_nan_loss(family: str) -> None:
    # the encoder's log-scale head is linear in x: counts of ~1e4 overflow exp(log sigma) in
    # float32 (loss NaN/inf); the loss says so and names the fix instead of returning NaN
    torch.manual_seed(0)
    model = HeavyTailVAE(VAEConfig(family=family, n=8, m=2))
    counts = torch.floor(torch.distributions.Pareto(1.0, 1.2).sample((64, 8)) * 2000.0)
    assert float(counts.max()) > 10_000
    with pytest.raises(ValueError, match=r"max \|x\| = .*log1p") as info:
        model.loss(counts)
    assert isinstance(info.value, InputScaleError)
    loss, _ = model.loss(torch.log1p(counts))  # the remedy the message names: finite
    assert bool(torch.isfinite(loss))
