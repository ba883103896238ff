"""The five VAE families: losses, the nu -> inf limit to LaplaceVAE, t3VAE's constants, sampling."""

from __future__ import annotations

import math

import pytest
import torch
from paretovae.model import FAMILIES, HeavyTailVAE, VAEConfig


def _pair(family_a: str, family_b: str, nu: float, n: int = 3, m: int = 2):
    torch.manual_seed(0)
    a = HeavyTailVAE(VAEConfig(family=family_a, n=n, m=m, hidden=16, nu=nu)).double()
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
        model = HeavyTailVAE(VAEConfig(family=family, n=3, m=2)).double()
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
    with pytest.raises(ValueError, match="tau"):
        VAEConfig(tau=float("nan"))
    with pytest.raises(TypeError, match="recon_sigma: expected a float"):
        VAEConfig(recon_sigma="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="config: expected a VAEConfig"):
        HeavyTailVAE({"family": "vae"})  # type: ignore[arg-type]
    model = HeavyTailVAE(VAEConfig(n=3))
    with pytest.raises(ValueError, match=r"x: expected shape \(batch, n=3\)"):
        model.loss(torch.zeros(4, 2))
    with pytest.raises(TypeError, match="x: expected a floating-point"):
        model.loss(torch.zeros(4, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="num: expected a positive int"):
        model.sample(0)


def test_beta_adds_the_l1_mean_penalty() -> None:
    mu = torch.tensor([[1.0, -2.0]], dtype=torch.float64)
    log_scale = torch.zeros(1, 2, dtype=torch.float64)
    a = HeavyTailVAE(VAEConfig(family="pareto-t", n=3, m=2, beta=0.0, alpha=2.0)).double()
    b = HeavyTailVAE(VAEConfig(family="pareto-t", n=3, m=2, beta=0.5, alpha=2.0)).double()
    diff = b.regulariser(mu, log_scale) - a.regulariser(mu, log_scale)
    assert float(diff) == pytest.approx(2.0 * 0.5 * 3.0)
