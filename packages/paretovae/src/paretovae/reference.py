"""Slow, exact oracles for the closed forms (float64, scalar loops, adaptive quadrature).

- `sympareto_logpdf`: the paper's density formula for one point, in plain Python floats.
- `gamma_power_divergence_quad`: ``D_g(q || p)`` from the definition (divergence.py's module
  docstring), every integral by `scipy.integrate` (1-D ``quad``, 2-D ``nquad``) after the
  substitution ``x = mu + sigma tan(u)`` that maps R onto (-pi/2, pi/2), so the power-law
  tails are integrated, not truncated.
- `kl_quad`: the g -> 0 limit, ``KL(q || p)``, the same way.

scipy is imported inside the functions (it is a test dependency, not a runtime one).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

__all__ = ["gamma_power_divergence_quad", "kl_quad", "laplace_logpdf", "sympareto_logpdf"]

LogPdf = Callable[[Sequence[float]], float]


def sympareto_logpdf(
    x: Sequence[float], mu: Sequence[float], sigma: Sequence[float], nu: float
) -> float:
    """``log P_n(x | mu, sigma, nu)`` by the formula, one coordinate at a time."""
    n = len(x)
    l1 = 0.0
    log_sigma = 0.0
    for xj, mj, sj in zip(x, mu, sigma, strict=True):
        l1 += abs((xj - mj) / sj)
        log_sigma += math.log(sj)
    log_c = math.lgamma(nu + n) - math.lgamma(nu) - n * math.log(2.0 * nu)
    return log_c - log_sigma - (nu + n) * math.log1p(l1 / nu)


def laplace_logpdf(x: Sequence[float], mu: Sequence[float], b: Sequence[float]) -> float:
    """Product Laplace ``sum_j -log(2 b_j) - |x_j - mu_j| / b_j``."""
    return sum(-math.log(2.0 * bj) - abs(xj - mj) / bj for xj, mj, bj in zip(x, mu, b, strict=True))


def _integrate(f: LogPdf, centre: Sequence[float], width: Sequence[float]) -> float:
    """``int_{R^d} f(x) dx`` (d = 1, 2) via ``x_j = c_j + w_j tan(u_j)``."""
    from scipy import integrate

    d = len(centre)

    def g(*u: float) -> float:
        x = [c + w * math.tan(uj) for c, w, uj in zip(centre, width, u, strict=True)]
        jac = 1.0
        for w, uj in zip(width, u, strict=True):
            jac *= w / math.cos(uj) ** 2
        return f(x) * jac

    lim = math.pi / 2
    opts = {"limit": 200, "epsabs": 1e-11, "epsrel": 1e-9}  # ~1e-9: enough for 1e-6 checks
    if d == 1:
        # split at the kink of the l1 norm (u = 0) so quad sees two smooth pieces
        return sum(integrate.quad(g, a, b, **opts)[0] for a, b in ((-lim, 0.0), (0.0, lim)))
    if d == 2:
        total = 0.0
        for r0 in ((-lim, 0.0), (0.0, lim)):
            for r1 in ((-lim, 0.0), (0.0, lim)):
                total += integrate.nquad(g, [r1, r0], opts=opts)[0]
        return total
    raise ValueError(f"centre: quadrature is implemented for d = 1 or 2, got d = {d}")


def gamma_power_divergence_quad(
    log_q: LogPdf,
    log_p: LogPdf,
    gamma: float,
    centre: Sequence[float],
    width: Sequence[float],
) -> float:
    """``(1/g)(||q||_{1+g} - int q (p / ||p||_{1+g})^g)`` by quadrature (d = 1 or 2).

    `centre` and `width` place the tan substitution (use q's centre and scale).
    """
    if not -1.0 < gamma < 0.0:
        raise ValueError(f"gamma: expected a value in (-1, 0), got {gamma!r}")
    norm_q = _integrate(lambda x: math.exp((1 + gamma) * log_q(x)), centre, width)
    norm_p = _integrate(lambda x: math.exp((1 + gamma) * log_p(x)), centre, width)
    cross = _integrate(lambda x: math.exp(log_q(x) + gamma * log_p(x)), centre, width)
    q_norm = norm_q ** (1.0 / (1.0 + gamma))
    p_norm = norm_p ** (1.0 / (1.0 + gamma))
    return (q_norm - cross / p_norm**gamma) / gamma


def kl_quad(log_q: LogPdf, log_p: LogPdf, centre: Sequence[float], width: Sequence[float]) -> float:
    """``int q (log q - log p)`` by quadrature (d = 1 or 2)."""
    return _integrate(lambda x: math.exp(log_q(x)) * (log_q(x) - log_p(x)), centre, width)


def integrate_density(log_f: LogPdf, centre: Sequence[float], width: Sequence[float]) -> float:
    """``int exp(log_f)`` over R^d (d = 1, 2): the normalisation test."""
    return _integrate(lambda x: math.exp(log_f(x)), centre, width)
