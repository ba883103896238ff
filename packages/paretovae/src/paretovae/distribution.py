"""The symmetric Pareto (symPareto) distribution as a `torch.distributions.Distribution`.

The paper's density (an l1-norm counterpart of the multivariate t) on R^n is

    P_n(x | mu, sigma, nu) = C_{n,nu} / prod_j sigma_j * (1 + ||(x - mu) / sigma||_1 / nu)^{-(nu + n)},
    C_{n,nu} = Gamma(nu + n) / ((2 nu)^n Gamma(nu)).

It is a scale mixture of product Laplace laws: with Z_j iid Laplace(0, 1) and W ~ Gamma(nu, 1),
``T = (nu / W) Z`` has density P_n(. | 0, 1, nu) (integrate the Laplace(0, nu / w) product
against the Gamma density of w). That gives the reparameterised sampler, and these facts the
tests check: in one dimension it is a two-sided Lomax with survival 1/2 (1 + t / nu)^{-nu};
a subset of coordinates is symPareto with the same nu; nu -> inf gives the product Laplace.
Moments: E ||T||_1 / n = nu / (nu - 1) (nu > 1), Var T_j = 2 nu^2 / ((nu - 1)(nu - 2)) (nu > 2).
In 1-D the cdf and its inverse are closed form: ``P(T <= t) = 1/2 (1 + |t|/nu)^{-nu}`` for t < 0
(and ``1 -`` that for t >= 0), ``t(p) = sign(p - 1/2) nu ((2 min(p, 1 - p))^{-1/nu} - 1)``.
Entropy: with ||T||_1 = (nu / W) S, S ~ Gamma(n, 1), 1 + ||T||_1 / nu = (W + S) / W, so
E log(1 + ||T||_1 / nu) = psi(nu + n) - psi(nu) and
H = -log C_{n,nu} + sum_j log sigma_j + (nu + n)(psi(nu + n) - psi(nu)).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import torch
from torch.distributions import Distribution, constraints, register_kl
from torch.distributions.utils import broadcast_all

__all__ = ["SymPareto", "laplace_noise", "sympareto_log_normaliser", "sympareto_rsample"]


def _shape(x: object) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, torch.Tensor) else ()


def sympareto_log_normaliser(nu: torch.Tensor | float, n: int) -> torch.Tensor:
    """``log C_{n,nu} = lgamma(nu + n) - lgamma(nu) - n log(2 nu)`` (elementwise in `nu`)."""
    nu_t = torch.as_tensor(nu, dtype=torch.get_default_dtype()) if not torch.is_tensor(nu) else nu
    return torch.lgamma(nu_t + n) - torch.lgamma(nu_t) - n * torch.log(2.0 * nu_t)


def laplace_noise(shape: torch.Size | tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
    """Standard Laplace(0, 1) draws by inversion, ``-sign(u) log(1 - |u|)``, u ~ U(-1, 1).

    One helper for every Laplace-based sampler of the package, so that the same global seed
    gives the same Z to a LaplaceVAE and to a symPareto encoder (the nu -> inf test).
    """
    finfo = torch.finfo(like.dtype)
    u = torch.rand(shape, dtype=like.dtype, device=like.device) * 2.0 - 1.0
    u = u.clamp(-1.0 + finfo.eps, 1.0 - finfo.eps)  # keeps log1p finite at the edges
    return -torch.sign(u) * torch.log1p(-u.abs())


def sympareto_rsample(
    loc: torch.Tensor, scale: torch.Tensor, nu: torch.Tensor | float
) -> torch.Tensor:
    """One reparameterised draw per row: ``loc + scale (nu / W) Z``, Z ~ Laplace(0, 1) iid
    (drawn first), W ~ Gamma(nu, 1) per row (no argument checks: `SymPareto.rsample` checks)."""
    z = laplace_noise(loc.shape, loc)
    nu_t = torch.as_tensor(nu, dtype=loc.dtype, device=loc.device).expand(loc.shape[:-1])
    w = torch._standard_gamma(nu_t)
    return loc + scale * (nu_t / w).unsqueeze(-1) * z


class SymPareto(Distribution):
    r"""Symmetric Pareto distribution ``P_n(mu, sigma, nu)`` over vectors of size ``n``.

    Args:
        loc: ``mu``, shape ``(*batch, n)``, or a Python float (then, with a float `scale`, a
            1-D law: ``event_shape == (1,)``; a 0-d tensor is refused, the event needs a size).
        scale: ``sigma > 0``, shape ``(*batch, n)`` or a float (broadcast with `loc`).
        nu: the tail index ``nu > 0``, a float or a tensor of shape ``batch`` (or
            broadcastable to it); smaller is heavier (``P(|T_1| > t) ~ t^{-nu}``).
        validate_args: as for torch's distributions (``None`` follows
            `Distribution.set_default_validate_args`).

    ``event_shape == (n,)``. `rsample` is reparameterised in `loc`, `scale` and `nu` (the
    Gamma mixing variable carries torch's implicit gradient). As torch's StudentT, `mean` is
    nan where ``nu <= 1`` and `variance` inf where ``1 < nu <= 2``, nan where ``nu <= 1``.
    `cdf` / `icdf` exist in 1-D (closed form; ``NotImplementedError`` for n > 1, where the
    l1-ball probabilities have no closed form). `kl_divergence` of two symPareto laws raises a
    ``NotImplementedError`` that says so: it has no closed form (the gamma-power divergence,
    `paretovae.gamma_power_divergence`, is the package's).
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.independent(constraints.real, 1),
        "scale": constraints.independent(constraints.positive, 1),
        "nu": constraints.positive,
    }
    support = constraints.independent(constraints.real, 1)
    has_rsample = True

    def __init__(
        self,
        loc: torch.Tensor | float,
        scale: torch.Tensor | float,
        nu: torch.Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        number = (int, float)
        if isinstance(loc, bool) or not (torch.is_tensor(loc) or isinstance(loc, number)):
            raise TypeError(f"loc: expected a torch.Tensor or a float, got {type(loc).__name__}")
        if isinstance(scale, bool) or not (torch.is_tensor(scale) or isinstance(scale, number)):
            raise TypeError(
                f"scale: expected a torch.Tensor or a float, got {type(scale).__name__}"
            )
        if torch.is_tensor(loc) and loc.ndim < 1:
            raise ValueError(f"loc: expected shape (*batch, n) with n >= 1, got {tuple(loc.shape)}")
        try:
            loc, scale = broadcast_all(loc, scale)
        except (RuntimeError, ValueError) as err:
            raise ValueError(
                f"loc, scale: shapes {_shape(loc)} and {_shape(scale)} do not broadcast"
            ) from err
        if loc.ndim == 0:  # two floats: a 1-D law
            loc, scale = loc.reshape(1), scale.reshape(1)
        batch_shape = loc.shape[:-1]
        nu_t = torch.as_tensor(nu, dtype=loc.dtype, device=loc.device)
        if nu_t.ndim > len(batch_shape):
            raise ValueError(
                f"nu: expected a scalar or a tensor broadcastable to the batch shape "
                f"{tuple(batch_shape)}, got shape {tuple(nu_t.shape)}"
            )
        try:
            nu_t = nu_t.expand(batch_shape)
        except RuntimeError as err:
            raise ValueError(
                f"nu: shape {tuple(nu_t.shape)} does not broadcast to the batch shape "
                f"{tuple(batch_shape)}"
            ) from err
        self.loc, self.scale, self.nu = loc, scale, nu_t
        super().__init__(batch_shape, loc.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> SymPareto:
        new = self._get_checked_instance(SymPareto, _instance)
        batch_shape = torch.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape + self.event_shape)
        new.scale = self.scale.expand(batch_shape + self.event_shape)
        new.nu = self.nu.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def n(self) -> int:
        """The event size ``n``."""
        return int(self.event_shape[0])

    @property
    def mean(self) -> torch.Tensor:
        """``mu``; nan where ``nu <= 1`` (as torch's StudentT)."""
        nu = self.nu.unsqueeze(-1).expand_as(self.loc)
        return self.loc.masked_fill(nu <= 1.0, math.nan)

    @property
    def mode(self) -> torch.Tensor:
        return self.loc

    @property
    def variance(self) -> torch.Tensor:
        """``2 sigma^2 nu^2 / ((nu - 1)(nu - 2))``; inf where ``1 < nu <= 2``, nan where
        ``nu <= 1`` (as torch's StudentT)."""
        nu = self.nu.unsqueeze(-1).expand_as(self.scale)
        var = self.scale.pow(2) * 2.0 * nu.pow(2) / ((nu - 1.0) * (nu - 2.0))
        return var.masked_fill(nu <= 2.0, math.inf).masked_fill(nu <= 1.0, math.nan)

    def _need_1d(self, what: str) -> None:
        if self.n != 1:
            raise NotImplementedError(
                f"{what}: closed form only for a 1-D symPareto (event_shape (1,)), got n = {self.n}"
            )

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        """``P(X <= value)`` in 1-D: value ``(*sample, *batch, 1)`` -> ``(*sample, *batch)``."""
        self._need_1d("cdf")
        if self._validate_args:
            self._validate_sample(value)
        t = ((value - self.loc) / self.scale).squeeze(-1)
        tail = 0.5 * torch.exp(-self.nu * torch.log1p(t.abs() / self.nu))
        return torch.where(t < 0, tail, 1.0 - tail)

    def icdf(self, value: torch.Tensor) -> torch.Tensor:
        """The quantile in 1-D: p ``(*sample, *batch)`` in [0, 1] -> ``(*sample, *batch, 1)``."""
        self._need_1d("icdf")
        p = torch.as_tensor(value, dtype=self.loc.dtype, device=self.loc.device)
        if self._validate_args and not bool(((p >= 0) & (p <= 1)).all()):
            raise ValueError("value: expected probabilities in [0, 1]")
        q = 2.0 * torch.minimum(p, 1.0 - p)  # 2 P(T > |t|)
        r = self.nu * torch.expm1(-torch.log(q) / self.nu)
        return self.loc + self.scale * (torch.sign(p - 0.5) * r).unsqueeze(-1)

    def rsample(self, sample_shape: torch.Size | list[int] | tuple[int, ...] = ()) -> torch.Tensor:
        """``x = mu + sigma (nu / W) Z``: Z iid Laplace(0, 1) first, then W ~ Gamma(nu, 1)."""
        shape = self._extended_shape(torch.Size(sample_shape))
        return sympareto_rsample(
            self.loc.expand(shape), self.scale.expand(shape), self.nu.expand(shape[:-1])
        )

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n = self.n
        l1 = ((value - self.loc) / self.scale).abs().sum(-1)
        log_c = sympareto_log_normaliser(self.nu, n)
        return log_c - self.scale.log().sum(-1) - (self.nu + n) * torch.log1p(l1 / self.nu)

    def entropy(self) -> torch.Tensor:
        n = self.n
        nu = self.nu
        return (
            -sympareto_log_normaliser(nu, n)
            + self.scale.log().sum(-1)
            + (nu + n) * (torch.digamma(nu + n) - torch.digamma(nu))
        )

    def __repr__(self) -> str:
        return f"SymPareto(n={self.n}, batch_shape={tuple(self.batch_shape)})"


@register_kl(SymPareto, SymPareto)
def _kl_sympareto(p: SymPareto, q: SymPareto) -> torch.Tensor:
    """Registered so that ``kl_divergence`` says why there is none (issue 46)."""
    raise NotImplementedError(
        "kl_divergence(p, q): the KL between two SymPareto laws has no closed form; use "
        "paretovae.gamma_power_divergence(p, q) (the paper's closed-form gamma-power "
        "divergence) or a Monte-Carlo estimate, (p.log_prob(x) - q.log_prob(x)).mean() with "
        "x = p.rsample((n,))"
    )
