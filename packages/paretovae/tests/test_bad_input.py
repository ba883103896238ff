"""Bad input to the public API, in one table: each case raises a ValueError/TypeError naming
the argument (issue 46's probes: `HeavyTailVAE.loss` on NaN data or an empty batch returned
NaN, a loc/scale shape mismatch raised torch's broadcasting RuntimeError, `SymPareto` refused
Python floats, `cdf` raised a NotImplementedError with an empty message, `kl_divergence` was
not registered for `SymPareto`)."""

from __future__ import annotations

import pytest
import torch
from paretovae import (
    HeavyTailVAE,
    SymPareto,
    VAEConfig,
    expected_abs_shift,
    gamma_power_divergence,
    sympareto_gamma,
    sympareto_gamma_divergence,
    sympareto_shift_bound,
    sympareto_shift_slope,
)
from torch.distributions import kl_divergence

from shared_core.testing import assert_bad_input

torch.manual_seed(0)
_VAE = HeavyTailVAE(VAEConfig(family="pareto-t", n=2, m=1, hidden=8))
_X = torch.randn(4, 2)
_NAN_X = _X.clone()
_NAN_X[1, 0] = float("nan")
_INF_X = _X.clone()
_INF_X[0, 1] = float("inf")
_MU = torch.zeros(3, 2)
_SIG = torch.ones(3, 2)
_NAN_MU = _MU.clone()
_NAN_MU[0, 0] = float("nan")
_P2 = SymPareto(torch.zeros(2), torch.ones(2), 3.0)
_P3 = SymPareto(torch.zeros(3), torch.ones(3), 3.0)

CASES = {
    # HeavyTailVAE: NaN / inf / empty / shape / dtype / type
    "loss on NaN data": (lambda: _VAE.loss(_NAN_X), ValueError, "x"),
    "loss on inf data": (lambda: _VAE.loss(_INF_X), ValueError, "x"),
    "loss on an empty batch": (lambda: _VAE.loss(torch.zeros(0, 2)), ValueError, "x"),
    "loss on the wrong width": (lambda: _VAE.loss(torch.zeros(4, 3)), ValueError, "x", "(4, 3)"),
    "loss on 1-D data": (lambda: _VAE.loss(torch.zeros(2)), ValueError, "x"),
    "loss on integer data": (lambda: _VAE.loss(_X.long()), TypeError, "x"),
    "loss on a list": (lambda: _VAE.loss([[0.0, 1.0]]), TypeError, "x"),
    "reconstruct on NaN data": (lambda: _VAE.reconstruct(_NAN_X), ValueError, "x"),
    "encode on an empty batch": (lambda: _VAE.encode(torch.zeros(0, 2)), ValueError, "x"),
    "sample zero": (lambda: _VAE.sample(0), ValueError, "num", "0"),
    "sample a float count": (lambda: _VAE.sample(2.5), ValueError, "num"),
    "model from a dict": (lambda: HeavyTailVAE({"n": 2}), TypeError, "config"),
    # VAEConfig: names and sizes
    "unknown family": (lambda: VAEConfig(family="zzz"), ValueError, "family", "zzz"),
    "zero latent size": (lambda: VAEConfig(m=0), ValueError, "m", "0"),
    "NaN tail index": (lambda: VAEConfig(nu=float("nan")), ValueError, "nu"),
    "string tail index": (lambda: VAEConfig(nu="5"), TypeError, "nu"),
    "negative alpha": (lambda: VAEConfig(alpha=-1.0), ValueError, "alpha"),
    "negative beta": (lambda: VAEConfig(beta=-0.1), ValueError, "beta"),
    "unknown objective": (lambda: VAEConfig(objective="zzz"), ValueError, "objective"),
    "unknown t_dof": (lambda: VAEConfig(t_dof="zzz"), ValueError, "t_dof"),
    "t3vae with nu <= 2": (lambda: VAEConfig(family="t3vae", nu=1.5), ValueError, "nu"),
    # SymPareto
    "loc/scale shape mismatch": (
        lambda: SymPareto(torch.zeros(3), torch.ones(2), 3.0),
        ValueError,
        "scale",
    ),
    "0-d loc tensor": (lambda: SymPareto(torch.tensor(0.0), 1.0, 3.0), ValueError, "loc"),
    "loc as a list": (lambda: SymPareto([0.0], 1.0, 3.0), TypeError, "loc"),
    "scale as a string": (lambda: SymPareto(0.0, "1", 3.0), TypeError, "scale"),
    "NaN loc": (lambda: SymPareto(torch.tensor([float("nan")]), 1.0, 3.0), ValueError, "loc"),
    "zero scale": (lambda: SymPareto(0.0, 0.0, 3.0), ValueError, "scale"),
    "negative nu": (lambda: SymPareto(0.0, 1.0, -1.0), ValueError, "nu"),
    "nu of the wrong batch shape": (
        lambda: SymPareto(torch.zeros(3, 2), torch.ones(3, 2), torch.ones(4) * 3),
        ValueError,
        "nu",
    ),
    "icdf outside [0, 1]": (
        lambda: SymPareto(0.0, 1.0, 3.0).icdf(torch.tensor([1.5])),
        ValueError,
        "value",
    ),
    "log_prob of NaN": (
        lambda: _P2.log_prob(torch.tensor([float("nan"), 0.0])),
        ValueError,
        "value",
    ),
    # divergences
    "gamma with nu <= 0": (lambda: sympareto_gamma(0.0, 2), ValueError, "nu"),
    "gamma with d = 0": (lambda: sympareto_gamma(3.0, 0), ValueError, "d"),
    "abs shift with nu <= 1": (
        lambda: expected_abs_shift(torch.zeros(2), torch.ones(2), 1.0),
        ValueError,
        "nu",
    ),
    "divergence with nu <= 1": (
        lambda: sympareto_gamma_divergence(_MU, _SIG, _MU, _SIG, 0.5),
        ValueError,
        "nu",
    ),
    "divergence of NaN mu_q": (
        lambda: sympareto_gamma_divergence(_NAN_MU, _SIG, _MU, _SIG, 3.0),
        ValueError,
        "mu_q",
    ),
    "divergence of zero sigma_p": (
        lambda: sympareto_gamma_divergence(_MU, _SIG, _MU, 0 * _SIG, 3.0),
        ValueError,
        "sigma_p",
    ),
    "divergence of integer mu_p": (
        lambda: sympareto_gamma_divergence(_MU, _SIG, _MU.long(), _SIG, 3.0),
        TypeError,
        "mu_p",
    ),
    "divergence of a list": (
        lambda: sympareto_gamma_divergence([0.0], _SIG, _MU, _SIG, 3.0),
        TypeError,
        "mu_q",
    ),
    "divergence of mismatched sizes": (
        lambda: sympareto_gamma_divergence(_MU, _SIG, torch.zeros(3, 5), _SIG, 3.0),
        ValueError,
        "mu_p",
    ),
    "shift bound of inf sigma_q": (
        lambda: sympareto_shift_bound(_MU, _SIG * float("inf"), _MU, _SIG, 3.0),
        ValueError,
        "sigma_q",
    ),
    "shift slope with d = 0": (lambda: sympareto_shift_slope(3.0, 0), ValueError, "d"),
    "shift slope with tau <= 0": (lambda: sympareto_shift_slope(3.0, 2, 0.0), ValueError, "tau"),
    "power divergence of a Normal": (
        lambda: gamma_power_divergence(_P2, torch.distributions.Normal(0.0, 1.0)),
        TypeError,
        "p",
    ),
    "power divergence of two sizes": (
        lambda: gamma_power_divergence(_P2, _P3),
        ValueError,
        "p",
    ),
    "power divergence of two nus": (
        lambda: gamma_power_divergence(_P2, SymPareto(torch.zeros(2), torch.ones(2), 4.0)),
        ValueError,
        "p",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])


def test_python_floats_make_a_1d_law() -> None:
    """Issue 46: `SymPareto` rejected Python floats; two floats are a 1-D law."""
    d = SymPareto(0.0, 2.0, 3.0)
    assert d.event_shape == (1,) and float(d.cdf(torch.zeros(1))) == pytest.approx(0.5)


def test_cdf_beyond_1d_says_why() -> None:
    """Issue 46: `cdf` raised NotImplementedError with an empty message."""
    with pytest.raises(NotImplementedError, match=r"cdf: closed form only for a 1-D"):
        _P2.cdf(torch.zeros(2))


def test_kl_divergence_points_to_the_gamma_power_divergence() -> None:
    """Issue 46: `kl_divergence` was not registered for `SymPareto`; it is, to say that the KL
    has no closed form and which divergence the package offers."""
    with pytest.raises(NotImplementedError, match="gamma_power_divergence"):
        kl_divergence(_P2, _P2)
