r"""Five VAEs on one MLP: Gaussian VAE, LaplaceVAE, t3VAE and ParetoVAE (t or symPareto decoder).

Every family shares the encoder ``x -> (mu_phi(x), log sigma_phi(x))`` and decoder
``z -> mu_theta(z)`` (two hidden LeakyReLU layers each, as t3VAE's synthetic models), so a
comparison changes only the distributions and the loss (`VAEConfig.family`):

| family | prior / encoder | decoder (recon term) | regulariser |
| --- | --- | --- | --- |
| ``vae`` | N(0, I) / N(mu, sigma^2) | Gaussian: ``||x - x_hat||^2 / (2 s^2)`` | ``alpha KL`` |
| ``laplace`` | Laplace(0, 1) / Laplace(mu, sigma) | Laplace: ``||x - x_hat||_1 / s`` | ``alpha KL`` |
| ``t3vae`` | t_nu / t_{nu+n} | Student t: ``||x - x_hat||^2 / s^2`` | t3VAE's gamma regulariser |
| ``pareto-t`` | P_m(0, 1, nu) / P_m(mu, sigma, nu + n/2) | t, 2(nu+m) dof: ``||x - x_hat||^2 / (2 s^2)`` | ``alpha D_g + alpha beta ||mu||_1`` |
| ``pareto-sympareto`` | P_m(0, 1, nu) / P_m(mu, sigma, nu + n) | P_n(., ., nu+m): ``||x - x_hat||_1 / s`` | ``alpha D_g + alpha beta ||mu||_1`` |

ParetoVAE (the joint-minimisation view; paper note, "Key Designs" 3-4 and "Loss & Training").
With the t decoder ``t_n(mu_theta(z), s^2 (1 + ||z||_1/nu), 2(nu + m) dof)`` the joint density is
one power form,

    p(x, z) ~ (1 + ||z||_1 / nu + ||x - mu_theta(z)||^2 / (2 (nu + m) s^2))^{-(nu + m + n/2)},

so ``gamma = -1/(nu + m + n/2) = -2/(2 nu + 2 m + n)`` (the paper's) makes ``p^gamma`` affine in
the reconstruction error and ``||z||_1``; the conditional of z given x is symPareto with index
``nu + n/2`` (the paper's encoder). The note writes the decoder as ``t_n(., ., nu + m)``: in the
power parameterisation ``(1 + ||.||^2 / (2 k))^{-(k + n/2)}`` that is ``k = nu + m``, i.e. the
standard t with ``2(nu + m)`` degrees of freedom above, the only reading under which the joint
is a single power with the paper's gamma. ``VAEConfig.t_dof = "nu+m"`` gives the literal
standard-t reading (t3VAE's convention: its t prior has exponent ``(nu + m)/2``); it changes
the decoder noise of `sample` only, since the loss uses the fixed-scale squared error. The
symPareto decoder ``P_n(mu_theta(z), s (1 + ||z||_1/nu), nu + m)`` gives
``(1 + ||z||_1/nu + ||x - mu_theta(z)||_1 / ((nu + m) s))^{-(nu+m+n)}``, ``gamma = -1/(nu + m + n)``
and encoder index ``nu + n``.

The practical gamma-loss (`VAEConfig.objective`):

- ``"centred"`` (the paper's, default): ``recon + alpha D_g(q_{phi,0} || p_alt) + alpha beta
  ||mu_phi(x)||_1``, with ``q_{phi,0} = P_m(0, sigma_phi(x), nu_e)`` the encoder re-centred at 0
  (on the gamma-flat manifold, where the divergence is closed form) and ``p_alt = P_m(0, tau,
  nu_e)``: Theorem 2.1's bound of the non-centred divergence. ``beta = None`` takes Theorem
  2.1's constant (`divergence.sympareto_shift_slope`), so the loss is exactly the bound's
  right-hand side, an upper bound of the ``"exact"`` loss with beta = 0 (tested); the l1 term
  has slope ``alpha beta`` at ``mu = 0``, the source of the sparsity the paper reports.
- ``"exact"`` (ours, an option): ``recon + alpha D_g(q_phi || p_alt) + alpha beta ||mu||_1`` with
  the exact shifted divergence (divergence.py, also closed form), whose slope in mu vanishes at
  0; the paper's bound is not needed for it. Here ``beta = None`` means 0.

As nu -> inf the symPareto laws become Laplace laws, gamma -> 0, ``D_g -> KL``: the ``"exact"``
``pareto-sympareto`` loss becomes the LaplaceVAE loss, the ``"centred"`` one its Theorem-2.1
bound ``KL(Laplace(0, sigma) || Laplace(0, tau)) + |mu| / tau`` (both tested).

t3VAE is Mincheol2/t3VAE's ``synthetic_data_analyses/models/t3VAE.py`` loss, term for term
(its ``recon_sigma``, ``reg_weight`` = our ``recon_sigma``, ``alpha``; `logvar` = 2 log sigma).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from paretovae._checks import check_nonneg_float, check_positive_float, check_tail_index
from paretovae.distribution import SymPareto, laplace_noise, sympareto_rsample
from paretovae.divergence import _divergence, sympareto_shift_slope
from shared_core.hub import Pretrained

__all__ = ["FAMILIES", "OBJECTIVES", "T_DOFS", "HeavyTailVAE", "InputScaleError", "VAEConfig"]

FAMILIES = ("vae", "laplace", "t3vae", "pareto-t", "pareto-sympareto")
OBJECTIVES = ("centred", "exact")  # ParetoVAE's divergence term (module docstring)
T_DOFS = ("joint", "nu+m")  # the t decoder's dof: 2(nu + m) (default) or nu + m


# exp overflows float32 above this: the encoder's scale sigma = exp(log sigma) becomes inf
_LOG_FLOAT32_MAX = math.log(torch.finfo(torch.float32).max)  # 88.72


class InputScaleError(ValueError):
    """The loss is not finite on a batch: the data are on a scale the unclamped encoder cannot
    take (raw counts in the thousands overflow ``exp(log sigma_phi(x))``), or the step is too
    large. `HeavyTailVAE.loss` raises it with the batch's max ``|x|`` and ``log sigma``."""


@dataclass
class VAEConfig:
    """One VAE; the defaults are the synthetic 2-D setting (n = 2, m = 1, as t3VAE)."""

    family: str = "pareto-t"  # one of FAMILIES
    n: int = 2  # data dimension
    m: int = 1  # latent dimension
    hidden: int = 64  # width of the two hidden layers of encoder and decoder (t3VAE: 64)
    nu: float = 5.0  # tail index of the prior (t3VAE, ParetoVAE); > 2 for t3VAE's constants
    alpha: float = 1.0  # weight of the regulariser (t3VAE's reg_weight, beta-VAE's beta)
    # ParetoVAE's l1 penalty on mu_phi (weight alpha * beta); None: Theorem 2.1's constant
    # (`sympareto_shift_slope`) for objective "centred", 0 for "exact"
    beta: float | None = None
    tau: float = 1.0  # scale of ParetoVAE's alternative prior P_m(0, tau, nu_e)
    recon_sigma: float = 1.0  # decoder scale s (t3VAE's recon_sigma)
    objective: str = "centred"  # ParetoVAE: "centred" (the paper's bound) or "exact"
    t_dof: str = "joint"  # pareto-t decoder: "joint" = 2(nu + m) dof, "nu+m" = nu + m dof

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"family: expected one of {FAMILIES}, got {self.family!r}")
        for name in ("n", "m", "hidden"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        check_tail_index("nu", self.nu, above=2.0 if self.family == "t3vae" else 0.0)
        check_positive_float("alpha", self.alpha)
        if self.beta is not None:
            check_nonneg_float("beta", self.beta)
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective: expected one of {OBJECTIVES}, got {self.objective!r}")
        if self.t_dof not in T_DOFS:
            raise ValueError(f"t_dof: expected one of {T_DOFS}, got {self.t_dof!r}")
        check_positive_float("tau", self.tau)
        check_positive_float("recon_sigma", self.recon_sigma)
        if self.family.startswith("pareto") and self.encoder_nu <= 1.0:
            raise ValueError(
                f"nu: the encoder index nu_e = {self.encoder_nu:g} must exceed 1 for the "
                f"gamma-power divergence (family {self.family!r}, n = {self.n}), got nu = {self.nu!r}"
            )

    @property
    def encoder_nu(self) -> float:
        """The encoder's tail index: nu + n/2 (t decoder), nu + n (symPareto decoder)."""
        if self.family == "pareto-t":
            return self.nu + self.n / 2.0
        if self.family == "pareto-sympareto":
            return self.nu + self.n
        if self.family == "t3vae":
            return self.nu + self.n
        return math.inf

    @property
    def l1_weight(self) -> float:
        """The resolved ``beta`` (module docstring): `beta`, or its default for `objective`."""
        if self.beta is not None:
            return float(self.beta)
        if self.objective == "exact" or not self.family.startswith("pareto"):
            return 0.0
        return sympareto_shift_slope(self.encoder_nu, self.m, self.tau)

    @property
    def t_decoder_dof(self) -> float:
        """Standard degrees of freedom of the ``pareto-t`` decoder: 2(nu + m) or nu + m."""
        return 2.0 * (self.nu + self.m) if self.t_dof == "joint" else self.nu + self.m

    @property
    def gamma(self) -> float:
        """The gamma of the family's gamma-power divergence (0 for the KL families)."""
        if self.family == "t3vae":
            return -2.0 / (self.nu + self.n + self.m)
        if self.family in ("pareto-t", "pareto-sympareto"):
            return -1.0 / (self.encoder_nu + self.m)
        return 0.0


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.LeakyReLU())
    return nn.Sequential(*layers)


def _log_t_normaliser(nu: float, d: int) -> float:
    """log of the multivariate t normaliser (t3VAE's ``log_t_normalizing_const``)."""
    return (
        math.lgamma((nu + d) / 2) - math.lgamma(nu / 2) - d / 2 * (math.log(nu) + math.log(math.pi))
    )


class HeavyTailVAE(nn.Module, Pretrained):
    """A VAE of one `VAEConfig.family`; `loss` is what `shared_core.train.fit` minimises.

    ``save_pretrained(dir)`` / ``HeavyTailVAE.from_pretrained(dir)`` (`shared_core.hub`) save
    and load it: config.json (the `VAEConfig`), model.safetensors, provenance, model card.

    Shapes: ``x`` is ``(batch, n)``, ``z`` is ``(batch, m)``.
    """

    def __init__(self, config: VAEConfig) -> None:
        super().__init__()
        if not isinstance(config, VAEConfig):
            raise TypeError(f"config: expected a VAEConfig, got {type(config).__name__}")
        self.config = config
        c = config
        self.encoder = _mlp([c.n, c.hidden, c.hidden])
        self.encoder.append(nn.LeakyReLU())
        self.mu_head = nn.Linear(c.hidden, c.m)
        self.log_scale_head = nn.Linear(c.hidden, c.m)
        self.decoder = _mlp([c.m, c.hidden, c.hidden, c.n])
        if c.family == "t3vae":
            self._t3vae_constants()

    def _t3vae_constants(self) -> None:
        """t3VAE's ``const_2bar1`` and ``tau`` (their ``__init__``), kept as floats."""
        c = self.config
        nu, n, m, s = c.nu, c.n, c.m, c.recon_sigma
        gamma = c.gamma
        log_tau_base = (
            -n * math.log(s) + _log_t_normaliser(nu, n) - math.log(nu + n - 2) + math.log(nu - 2)
        )
        self.t3_const = (1 + m / (nu + n - 2)) * math.exp(-gamma / (1 + gamma) * log_tau_base)
        self.t3_tau = math.exp(2 / (nu + n - 2) * log_tau_base)

    # -- encoder and decoder ---------------------------------------------------------------
    def _check_x(self, x: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(f"x: expected a floating-point torch.Tensor, got {type(x).__name__}")
        if x.ndim != 2 or x.shape[1] != self.config.n or x.shape[0] == 0:
            raise ValueError(
                f"x: expected shape (batch, n={self.config.n}) with batch >= 1, got {tuple(x.shape)}"
            )
        if not bool(torch.isfinite(x).all()):
            raise ValueError("x: contains NaN or infinite values")

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mu_phi(x), log sigma_phi(x))``, each ``(batch, m)``."""
        self._check_x(x)
        h = self.encoder(x)
        return self.mu_head(h), self.log_scale_head(h)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """``mu_theta(z)``: ``(batch, m) -> (batch, n)``."""
        return self.decoder(z)

    def posterior_sample(self, mu: torch.Tensor, log_scale: torch.Tensor) -> torch.Tensor:
        """A reparameterised draw from the family's encoder."""
        c = self.config
        scale = log_scale.exp()
        if c.family == "vae":
            return mu + scale * torch.randn_like(mu)
        if c.family == "laplace":
            return mu + scale * laplace_noise(mu.shape, mu)
        if (
            c.family == "t3vae"
        ):  # t3VAE's encoder_reparameterize: std = sqrt(nu/(nu+n)) e^{logvar/2}
            nu_n = c.nu + c.n
            std = math.sqrt(c.nu / nu_n) * scale
            v = (
                torch._standard_gamma(
                    torch.full(mu.shape[:1], nu_n / 2, dtype=mu.dtype, device=mu.device)
                )
                * 2.0
            )
            return mu + std * torch.randn_like(mu) * torch.sqrt(nu_n / v).unsqueeze(-1)
        return sympareto_rsample(mu, scale, c.encoder_nu)

    # -- the loss ----------------------------------------------------------------------------
    def recon_term(self, x: torch.Tensor, x_hat: torch.Tensor) -> torch.Tensor:
        """Per-sample reconstruction term, ``(batch,)``."""
        c = self.config
        s = c.recon_sigma
        if c.family in ("laplace", "pareto-sympareto"):
            return (x - x_hat).abs().sum(-1) / s
        if c.family == "t3vae":
            return (x - x_hat).pow(2).sum(-1) / s**2
        return (x - x_hat).pow(2).sum(-1) / (2 * s**2)

    def regulariser(self, mu: torch.Tensor, log_scale: torch.Tensor) -> torch.Tensor:
        """Per-sample regulariser (already weighted by alpha), ``(batch,)``."""
        c = self.config
        if c.family == "vae":
            kl = 0.5 * (mu.pow(2) + (2 * log_scale).exp() - 1.0 - 2 * log_scale).sum(-1)
            return c.alpha * kl
        if c.family == "laplace":  # KL(Laplace(mu, b) || Laplace(0, 1))
            b = log_scale.exp()
            kl = (-log_scale + mu.abs() + b * torch.exp(-mu.abs() / b) - 1.0).sum(-1)
            return c.alpha * kl
        if c.family == "t3vae":  # t3VAE's gamma_regularizer, per sample
            logvar = 2 * log_scale
            nu, n, g = c.nu, c.n, c.gamma
            reg = (
                mu.pow(2).sum(-1)
                + nu / (nu + n - 2) * logvar.exp().sum(-1)
                - nu * self.t3_const * torch.exp(-g / (2 + 2 * g) * logvar.sum(-1))
                + nu * self.t3_tau
            )
            return c.alpha * reg
        zero = torch.zeros_like(mu)
        centre = zero if c.objective == "centred" else mu  # q_{phi,0} or q_phi
        tau = torch.full_like(mu, c.tau)
        div = _divergence(centre, log_scale.exp(), zero, tau, c.encoder_nu)  # nu_e > 1 by config
        return c.alpha * (div + c.l1_weight * mu.abs().sum(-1))

    def loss(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        """Batch mean of recon + regulariser, and the two parts (for `fit`'s log)."""
        mu, log_scale = self.encode(x)
        z = self.posterior_sample(mu, log_scale)
        recon = self.recon_term(x, self.decode(z)).mean()
        reg = self.regulariser(mu, log_scale).mean()
        total = recon + reg
        if not bool(torch.isfinite(total.detach())):
            raise _scale_error(x, log_scale, recon, reg)
        return total, {"recon": float(recon.detach()), "reg": float(reg.detach())}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The loss (so that `fit`'s DDP wrapper sees a forward)."""
        return self.loss(x)[0]

    # -- use ---------------------------------------------------------------------------------
    @torch.no_grad()
    def reconstruct(self, x: torch.Tensor) -> torch.Tensor:
        """``mu_theta(mu_phi(x))``: the deterministic reconstruction (denoising, word counts)."""
        mu, _ = self.encode(x)
        return self.decode(mu)

    @torch.no_grad()
    def sample(self, num: int, decoder_noise: bool = True) -> torch.Tensor:
        """``num`` draws from the generative model: z from the prior, x from the decoder.

        The decoder noise follows each family's generative story (t3VAE: their
        ``decoder_sampling``; ParetoVAE: the z-dependent scales of the joint power form).
        """
        if isinstance(num, bool) or not isinstance(num, int) or num < 1:
            raise ValueError(f"num: expected a positive int, got {num!r}")
        c = self.config
        p = next(self.parameters())
        shape = (num, c.m)
        nu, s = c.nu, c.recon_sigma
        if c.family == "vae":
            z = torch.randn(shape, dtype=p.dtype, device=p.device)
        elif c.family == "laplace":
            z = laplace_noise(shape, p)
        elif c.family == "t3vae":
            v = (
                torch._standard_gamma(torch.full((num,), nu / 2, dtype=p.dtype, device=p.device))
                * 2.0
            )
            z = torch.randn(shape, dtype=p.dtype, device=p.device) * torch.sqrt(nu / v).unsqueeze(
                -1
            )
        else:
            z = SymPareto(
                torch.zeros(shape, dtype=p.dtype, device=p.device),
                torch.ones(shape, dtype=p.dtype, device=p.device),
                nu,
            ).sample()
        x_mean = self.decode(z)
        if not decoder_noise:
            return x_mean
        if c.family == "vae":
            return x_mean + s * torch.randn_like(x_mean)
        if c.family == "laplace":
            return x_mean + s * laplace_noise(x_mean.shape, x_mean)
        if c.family == "t3vae":
            nu_m = nu + c.m
            v = (
                torch._standard_gamma(torch.full((num,), nu_m / 2, dtype=p.dtype, device=p.device))
                * 2.0
            )
            std = s * torch.sqrt((nu + z.pow(2).sum(-1)) / nu_m)
            scale = (std * torch.sqrt(nu_m / v)).unsqueeze(-1)
            return x_mean + scale * torch.randn_like(x_mean)
        spread = 1.0 + z.abs().sum(-1, keepdim=True) / nu  # (1 + ||z||_1 / nu)
        if c.family == "pareto-t":
            dof = c.t_decoder_dof
            v = (
                torch._standard_gamma(torch.full((num,), dof / 2, dtype=p.dtype, device=p.device))
                * 2.0
            )
            t = torch.randn_like(x_mean) * torch.sqrt(dof / v).unsqueeze(-1)
            return x_mean + s * spread.sqrt() * t
        noise = SymPareto(torch.zeros_like(x_mean), torch.ones_like(x_mean), nu + c.m).sample()
        return x_mean + s * spread * noise


def _scale_error(
    x: torch.Tensor, log_scale: torch.Tensor, recon: torch.Tensor, reg: torch.Tensor
) -> InputScaleError:
    """Why the loss is not finite, in numbers. The encoder's heads are plain linear layers
    (no clamp, as in the paper's and t3VAE's MLPs), so ``log sigma`` grows with ``|x|``:
    inputs in the thousands take it past 88.7, where ``exp`` overflows float32."""
    x_max = float(x.detach().abs().max())
    ls = log_scale.detach()
    ls_max = (
        float(ls[torch.isfinite(ls)].abs().max()) if bool(torch.isfinite(ls).any()) else math.inf
    )
    return InputScaleError(
        f"x: the loss is not finite (reconstruction {float(recon.detach()):.3g}, regulariser "
        f"{float(reg.detach()):.3g}) on a batch with max |x| = {x_max:.4g} and encoder "
        f"|log sigma| up to {ls_max:.3g} (float32 overflows in exp(log sigma) above "
        f"{_LOG_FLOAT32_MAX:.1f}, and in the squared error of samples at scale e^{ls_max:.0f}). "
        f"The encoder has no clamp, so raw counts in the thousands overflow it: log-transform "
        f"the data (log1p; `paretovae fit --set transform=log1p`) or standardise them; if the "
        f"data are already small, lower the learning rate"
    )
