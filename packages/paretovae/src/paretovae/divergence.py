r"""The gamma-power divergence and its closed form between symPareto laws of equal nu.

Convention (t3VAE, Kim et al. 2024; gamma in (-1, 0)): with ``||p||_{1+g} = (int p^{1+g})^{1/(1+g)}``,

    D_g(q || p) = (1 / g) * ( ||q||_{1+g} - int q (p / ||p||_{1+g})^g ).

By the reverse Hoelder inequality it is >= 0, zero iff q = p, and it tends to KL(q || p) as
g -> 0. For ``q = P_d(mu_q, sigma_q, nu)`` and ``p = P_d(mu_p, sigma_p, nu)`` with
``g = -1 / (nu + d)``, ``p^g`` is affine in ``||(x - mu_p) / sigma_p||_1``, so every integral
is closed:

    int p^{1+g} = C^{1+g} (prod sigma_p)^{-g} A,     A = (nu / (nu - 1))^d / C_{d, nu-1},
    int q p^g   = C^g (prod sigma_p)^{-g} (1 + (1/nu) sum_j E_q |x_j - mu_pj| / sigma_pj),
    E |a + s T| = |a| + s nu / (nu - 1) (1 + |a| / (s nu))^{-(nu - 1)}   (T ~ P_1(0, 1, nu)),

and with ``e = -g / (1 + g) = 1 / (nu + d - 1)`` and ``C A = (nu + d - 1) / (nu - 1)``:

    D_g(q || p) = (nu + d) A^e [ (prod sigma_p)^e (1 + (1/nu) sum_j E|.|_j / sigma_pj)
                                 - (nu + d - 1) / (nu - 1) (prod sigma_q)^e ].

Shift bound (our statement of the paper's Theorem 2.1, which we could not read; proved by
``E|a + sT| <= |a| + s nu / (nu - 1)``): moving q's centre away from p's by ``delta`` costs at
most linearly in ``||delta / sigma_p||_1``,

    D_g(q || p) <= D_g(q_0 || p) + (nu + d) A^e (prod sigma_p)^e ||(mu_q - mu_p) / sigma_p||_1 / nu,

where q_0 is q re-centred at mu_p. All functions need ``nu > 1`` (the power-(1+g) integral
of p diverges otherwise).
"""

from __future__ import annotations

import math

import torch

from paretovae._checks import check_finite_tensor, check_positive_tensor, check_tail_index
from paretovae.distribution import SymPareto

__all__ = [
    "expected_abs_shift",
    "gamma_power_divergence",
    "sympareto_gamma",
    "sympareto_gamma_divergence",
    "sympareto_shift_bound",
    "sympareto_shift_slope",
]


def sympareto_gamma(nu: float, d: int) -> float:
    """The power ``gamma = -1 / (nu + d)`` that makes the divergence closed-form."""
    check_tail_index("nu", nu, above=0.0)
    if not isinstance(d, int) or d < 1:
        raise ValueError(f"d: expected a positive int dimension, got {d!r}")
    return -1.0 / (nu + d)


def expected_abs_shift(
    a: torch.Tensor, s: torch.Tensor, nu: float, check: bool = True
) -> torch.Tensor:
    """``E|a + s T|`` for ``T ~ P_1(0, 1, nu)`` (two-sided Lomax), elementwise; ``nu > 1``.

    ``|a| + 2 E[(sT - |a|)_+]`` and ``E[(sT - c)_+] = s/2 int_{c/s}^inf (1 + t/nu)^{-nu} dt``.
    Smooth in `a` (its derivative ``sign(a)(1 - (1 + |a|/(s nu))^{-nu})`` vanishes at 0).
    """
    if check:
        check_tail_index("nu", nu, above=1.0)
    b = a.abs()
    return b + s * (nu / (nu - 1.0)) * torch.exp(-(nu - 1.0) * torch.log1p(b / (s * nu)))


def _log_k(nu: float, d: int) -> float:
    """``log((nu + d) A^e)`` with ``log A = d log(nu / (nu - 1)) - log C_{d, nu - 1}``."""
    log_c = math.lgamma(nu - 1.0 + d) - math.lgamma(nu - 1.0) - d * math.log(2.0 * (nu - 1.0))
    log_a = d * math.log(nu / (nu - 1.0)) - log_c
    return math.log(nu + d) + log_a / (nu + d - 1.0)


def _divergence(
    mu_q: torch.Tensor, sigma_q: torch.Tensor, mu_p: torch.Tensor, sigma_p: torch.Tensor, nu: float
) -> torch.Tensor:
    """The closed form without the argument checks (the training loss calls it every step)."""
    d = mu_q.shape[-1]
    e = 1.0 / (nu + d - 1.0)
    eabs = expected_abs_shift(mu_q - mu_p, sigma_q, nu, check=False)
    cross = torch.exp(e * sigma_p.log().sum(-1)) * (1.0 + (eabs / sigma_p).sum(-1) / nu)
    self_term = (nu + d - 1.0) / (nu - 1.0) * torch.exp(e * sigma_q.log().sum(-1))
    return math.exp(_log_k(nu, d)) * (cross - self_term)


def _check_pair(
    mu_q: torch.Tensor, sigma_q: torch.Tensor, mu_p: torch.Tensor, sigma_p: torch.Tensor, nu: float
) -> None:
    check_tail_index("nu", nu, above=1.0)
    for name, t in (("mu_q", mu_q), ("mu_p", mu_p)):
        check_finite_tensor(name, t)
    for name, t in (("sigma_q", sigma_q), ("sigma_p", sigma_p)):
        check_positive_tensor(name, t)
    if mu_q.ndim < 1:
        raise ValueError(f"mu_q: expected shape (*batch, d), got {tuple(mu_q.shape)}")
    for name, t in (("sigma_q", sigma_q), ("mu_p", mu_p), ("sigma_p", sigma_p)):
        try:
            shape = torch.broadcast_shapes(mu_q.shape, t.shape)
        except RuntimeError:
            shape = None
        if shape != mu_q.shape:
            raise ValueError(
                f"{name}: expected a shape broadcastable to mu_q's {tuple(mu_q.shape)}, "
                f"got {tuple(t.shape)}"
            )


def sympareto_gamma_divergence(
    mu_q: torch.Tensor,
    sigma_q: torch.Tensor,
    mu_p: torch.Tensor,
    sigma_p: torch.Tensor,
    nu: float,
) -> torch.Tensor:
    """``D_gamma(P_d(mu_q, sigma_q, nu) || P_d(mu_p, sigma_p, nu))`` at ``gamma = -1/(nu + d)``.

    Args:
        mu_q, sigma_q: the first law's centre and scales, ``(*batch, d)``.
        mu_p, sigma_p: the second law's, broadcastable to ``(*batch, d)``.
        nu: the common tail index, ``> 1``.

    Returns:
        ``(*batch,)``, >= 0 (up to rounding).
    """
    _check_pair(mu_q, sigma_q, mu_p, sigma_p, nu)
    return _divergence(mu_q, sigma_q, mu_p, sigma_p, nu)


def sympareto_shift_bound(
    mu_q: torch.Tensor,
    sigma_q: torch.Tensor,
    mu_p: torch.Tensor,
    sigma_p: torch.Tensor,
    nu: float,
) -> torch.Tensor:
    """The right-hand side of the shift bound (module docstring); ``>= sympareto_gamma_divergence``."""
    _check_pair(mu_q, sigma_q, mu_p, sigma_p, nu)
    d = mu_q.shape[-1]
    e = 1.0 / (nu + d - 1.0)
    centred = _divergence(mu_p.expand_as(mu_q), sigma_q, mu_p, sigma_p, nu)
    slope = torch.exp(_log_k(nu, d) + e * sigma_p.log().sum(-1)) / nu
    return centred + slope * ((mu_q - mu_p) / sigma_p).abs().sum(-1)


def sympareto_shift_slope(nu: float, d: int, tau: float = 1.0) -> float:
    """The shift bound's slope for an isotropic ``p = P_d(., tau 1_d, nu)``: the ``beta`` of
    Theorem 2.1 (paper note, "gamma-flatness upper bound") with which

        D_g(q || p) <= D_g(q_0 || p) + beta ||mu_q - mu_p||_1,

    ``beta = (nu + d) A^e tau^{d e} / (nu tau)`` (module docstring); -> ``1 / tau`` as nu -> inf,
    where the bound becomes ``KL(Laplace(mu, s) || Laplace(0, tau)) <= KL(centred) + |mu| / tau``.
    ParetoVAE's default ``beta`` (`VAEConfig.beta = None`): the practical loss is then exactly
    the bound's right-hand side, an upper bound of the exact divergence term.
    """
    check_tail_index("nu", nu, above=1.0)
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d: expected a positive int dimension, got {d!r}")
    check_tail_index("tau", tau, above=0.0)
    e = 1.0 / (nu + d - 1.0)
    return math.exp(_log_k(nu, d) + d * e * math.log(tau)) / (nu * tau)


def gamma_power_divergence(q: SymPareto, p: SymPareto) -> torch.Tensor:
    """`sympareto_gamma_divergence` for two `SymPareto` objects of one (scalar) nu and size."""
    if not isinstance(q, SymPareto) or not isinstance(p, SymPareto):
        raise TypeError(
            f"q, p: expected two SymPareto distributions, got {type(q).__name__} and "
            f"{type(p).__name__}"
        )
    if q.event_shape != p.event_shape:
        raise ValueError(
            f"p: expected the event shape of q {tuple(q.event_shape)}, got {tuple(p.event_shape)}"
        )
    nus = torch.cat([q.nu.reshape(-1), p.nu.reshape(-1)])
    if not bool((nus == nus[0]).all()):
        raise ValueError(
            "p: the closed form needs one common nu for q and p (the paper's equal-exponent "
            f"case), got nu in [{nus.min().item():.4g}, {nus.max().item():.4g}]"
        )
    return sympareto_gamma_divergence(q.loc, q.scale, p.loc, p.scale, float(nus[0]))
