"""VADD training objectives: the paper's DELBO and a valid discrete-time bound.

Notation (paper Sec. 3; MDLM background): ``alpha_t`` the schedule, ``w(t) = -alpha'_t/(1-alpha_t)``
(1/t for log-linear), ``M_t`` the masked positions of ``x_t ~ q(x_t | x0)``, ``mu_theta^i(x_t, z, t)``
the decoder, ``r_phi(z | x0, x_t, t)`` the recognition Gaussian, ``p(z) = N(0, I)``.

``objective="paper"`` (DELBO, the "double ELBO" of the paper, with KL annealing ``lambda``):

    L_lambda(x0) = E_t E_q(x_t|x0) E_r [ w(t) ( sum_{i in M_t} -log mu^i(x_t, z, t)[x0^i]
                                               + lambda KL(r_phi(.|x0,x_t,t) || p) ) ]

The KL sits inside the time weight. This is what the paper trains; it is *not* a valid bound on
the negative log-likelihood of the sampler (see `vadd.likelihood` and the README).

``objective="valid"`` with ``steps = T``: the exact discrete-time ELBO of the T-step ancestral
sampler with one latent per step (derived in the README, "Which bound is valid"):

    NLL_T(x0) <= sum_{k<T} E_{x_{t_k}} [ p_k E_r sum_{i in M_k} -log mu^i(x_{t_k}, z, t_k)[x0^i]
                                        + c_k KL(r_phi(.|x0, x_{t_k}, t_k) || p) ],

``p_k = (alpha_{t_{k+1}} - alpha_{t_k}) / (1 - alpha_{t_k})`` the per-step unmasking probability
(1 at the last step), and ``c_k = 1 - (1 - p_k)^{|M_k|}`` the probability that step k reveals
a token: a step that reveals nothing needs no z, so it pays no KL (derivation in
`vadd.valid_bound`); a step that reveals tokens pays its own full KL, because each step draws
its own z; the DELBO discounts that KL by ``w(t) dt``. One step k is drawn uniformly per
example (times T).
With ``latent_dim = 0`` both objectives reduce to the corresponding MDM bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from masked_diffusion import LogLinearSchedule, LossOutput, Schedule, check_tokens, mdlm_loss

from vadd.paths import still_masked_probs, unmask_probs

OBJECTIVES = ("paper", "valid")


def gaussian_kl(m: torch.Tensor, log_sigma: torch.Tensor) -> torch.Tensor:
    """``KL(N(m, diag sigma^2) || N(0, I))`` per row, (batch,), analytic."""
    return 0.5 * (m.pow(2) + torch.exp(2.0 * log_sigma) - 1.0 - 2.0 * log_sigma).sum(dim=-1)


def gaussian_log_prob(z: torch.Tensor, m: torch.Tensor, log_sigma: torch.Tensor) -> torch.Tensor:
    """``log N(z; m, diag sigma^2)`` summed over the last dim, (batch,)."""
    e = (z - m) * torch.exp(-log_sigma)
    return (-0.5 * e.pow(2) - log_sigma - 0.5 * math.log(2.0 * math.pi)).sum(dim=-1)


def kl_weight(step: int, anneal_steps: int) -> float:
    """KL annealing ``lambda = min(1, step / anneal_steps)`` (linear warm-up; 1 if anneal_steps=0)."""
    if isinstance(anneal_steps, bool) or not isinstance(anneal_steps, int) or anneal_steps < 0:
        raise ValueError(f"anneal_steps: expected an int >= 0, got {anneal_steps!r}")
    if not step >= 0:
        raise ValueError(f"step: expected >= 0, got {step!r}")
    return 1.0 if anneal_steps == 0 else min(1.0, step / anneal_steps)


@dataclass
class VADDLossOutput:
    """What `vadd_loss` computed.

    loss: scalar, nats per token (``(rec + lambda * kl_term).sum() / (batch * L)``), the MDM
        convention, so that it is comparable with ``mdlm_loss(...).loss``.
    rec: (batch,) weighted reconstruction term; kl: (batch,) the unweighted KL(r || p);
    kl_term: (batch,) the KL as it enters the bound (``w(t) kl`` DELBO, ``T c_k kl`` valid).
    mdm: the `masked_diffusion.LossOutput` of the z-conditioned denoiser call (paper objective).
    """

    loss: torch.Tensor
    rec: torch.Tensor
    kl: torch.Tensor
    kl_term: torch.Tensor
    t: torch.Tensor
    x_t: torch.Tensor
    z: torch.Tensor | None
    mdm: LossOutput | None = None


def _sample_z(model, x0, x_t, t, generator, analytic_kl):
    m, log_sigma = model.posterior(x0, x_t, t)
    eps = torch.randn(m.shape, generator=generator, device=m.device)
    z = m + torch.exp(log_sigma) * eps  # reparameterisation
    if analytic_kl:
        kl = gaussian_kl(m, log_sigma)
    else:  # the paper's single-sample log-ratio log r(z) - log p(z)
        kl = gaussian_log_prob(z, m, log_sigma) - gaussian_log_prob(
            z, torch.zeros_like(m), torch.zeros_like(m)
        )
    return z, kl


def vadd_loss(
    model,
    x0: torch.Tensor,
    *,
    objective: str = "paper",
    steps: int | None = None,
    schedule: Schedule | None = None,
    kl_weight: float = 1.0,
    analytic_kl: bool = True,
    generator: torch.Generator | None = None,
    antithetic: bool = True,
    sampling_eps: float = 1e-3,
    t: torch.Tensor | None = None,
) -> VADDLossOutput:
    """One Monte-Carlo estimate of the VADD objective for a batch x0 (batch, L).

    The DELBO goes through `masked_diffusion.mdlm_loss` with a z-conditioned closure: t and
    ``x_t`` are drawn exactly as for the MDM (same generator calls), then ``z ~ r_phi`` (one
    ``randn`` call). So with ``latent_dim = 0`` the loss equals ``mdlm_loss`` on the same batch
    and generator state, and with ``kl_weight = 0`` at initialisation (zero adaLN maps) too.

    Args:
        model: a `vadd.VADD`.
        objective: ``"paper"`` (DELBO) or ``"valid"`` (discrete-time, needs `steps`).
        steps: T of the valid bound (the sampler's step count).
        schedule: alpha_t (default log-linear, eps 1e-3).
        kl_weight: lambda, the annealing factor on the KL term (`kl_weight`).
        analytic_kl: analytic Gaussian KL (default) or the paper's one-sample log-ratio.
        t: fixed times (batch,) for the DELBO (default: antithetic ``U[sampling_eps, 1]``).
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: expected one of {OBJECTIVES}, got {objective!r}")
    if not (isinstance(kl_weight, (int, float)) and kl_weight >= 0 and math.isfinite(kl_weight)):
        raise ValueError(f"kl_weight: expected a finite float >= 0, got {kl_weight!r}")
    V = model.vocab_size
    check_tokens(x0, V, "x0")
    if x0.shape[1] != model.cfg.seq_len:
        raise ValueError(f"x0: expected shape (batch, {model.cfg.seq_len}), got {tuple(x0.shape)}")
    schedule = schedule or LogLinearSchedule()
    if objective == "valid":
        if steps is None:
            raise ValueError("steps: objective='valid' needs the sampler's step count T")
        return _valid_loss(model, x0, schedule, steps, kl_weight, analytic_kl, generator)
    store: dict[str, torch.Tensor] = {}

    def denoiser(x_t: torch.Tensor, tt: torch.Tensor) -> torch.Tensor:
        if model.latent_dim == 0:
            return model.logits(x_t, tt)
        z, kl = _sample_z(model, x0, x_t, tt, generator, analytic_kl)
        store["z"], store["kl"] = z, kl
        return model.logits(x_t, tt, z)

    out = mdlm_loss(
        denoiser,
        x0,
        schedule,
        V,
        generator=generator,
        antithetic=antithetic,
        sampling_eps=sampling_eps,
        t=t,
    )
    rec = out.terms.sum(dim=1)
    kl = store.get("kl", torch.zeros_like(rec))
    kl_term = schedule.weight(out.t.float()) * kl
    loss = (out.terms.sum() + kl_weight * kl_term.sum()) / out.terms.numel()
    return VADDLossOutput(loss, rec, kl, kl_term, out.t, out.x_t, store.get("z"), out)


def _valid_loss(model, x0, schedule, steps, lam, analytic_kl, generator) -> VADDLossOutput:
    from masked_diffusion import time_grid

    b, n = x0.shape
    grid = time_grid(steps).to(x0.device)
    p = unmask_probs(schedule, steps).to(x0.device)
    keep = still_masked_probs(schedule, steps).to(x0.device)
    k = torch.randint(0, steps, (b,), generator=generator, device=x0.device)
    t = grid[k]
    u = torch.rand((b, n), generator=generator, device=x0.device)
    x_t = torch.where(u < keep[k][:, None], torch.full_like(x0, model.mask_id), x0)
    z, kl = None, torch.zeros(b, device=x0.device)
    if model.latent_dim > 0:
        z, kl = _sample_z(model, x0, x_t, t, generator, analytic_kl)
    logits = model.logits(x_t, t, z)
    nll = -F.log_softmax(logits.float(), dim=-1).gather(-1, x0.long()[..., None]).squeeze(-1)
    nll = torch.where(x_t == model.mask_id, nll, torch.zeros_like(nll))
    rec = steps * p[k] * nll.sum(dim=1)
    n_masked = (x_t == model.mask_id).sum(dim=1).to(kl.dtype)
    reveal = 1.0 - torch.pow(1.0 - p[k].to(kl.dtype), n_masked)  # 0 if nothing is masked
    kl_term = steps * reveal * kl
    loss = (rec.sum() + lam * kl_term.sum()) / (b * n)
    return VADDLossOutput(loss, rec, kl, kl_term, t, x_t, z)
