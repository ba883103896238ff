"""Slow, obviously correct versions of the VADD computations: the oracles of the tests.

* `sample_distribution_paths`: the T-step sampler's output distribution as an explicit sum over
  reveal-step assignments ``kappa in {0..T-1}^L`` and output sequences x (no dynamic
  programming): ``P(x) = sum_kappa prod_i P(kappa_i) prod_k E_{z_k} prod_{i: kappa_i = k}
  mu^i(x_{t_k}(x, kappa), z_k, t_k)[x^i]``, where ``x_{t_k}`` shows the tokens with
  ``kappa_i < k``. Uses the same latents as `vadd.exact_sample_distribution`.
* `valid_bound_enumerated`: `vadd.valid_bound` with every expectation done exactly: the mask
  pattern of each step enumerated (``2^L`` patterns with their grid probabilities) and the
  ``E_r`` integral by Gauss-Hermite over r's noise (no Monte Carlo).
* `delbo_loop`: the paper's DELBO integrand one example at a time, for given t, x_t and noise.
"""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F
from masked_diffusion import LogLinearSchedule, Schedule, time_grid

from vadd.loss import gaussian_kl
from vadd.paths import reveal_step_probs, still_masked_probs, unmask_probs


@torch.no_grad()
def sample_distribution_paths(
    model, steps: int, latents: torch.Tensor | None, schedule: Schedule | None = None
) -> torch.Tensor:
    """(V,) * L table; `latents` (steps, n_latent, d) or None for ``latent_dim = 0``."""
    schedule = schedule or LogLinearSchedule()
    V, L = model.vocab_size, model.cfg.seq_len
    grid = time_grid(steps)
    pk = reveal_step_probs(schedule, steps).double()
    P = torch.zeros((V,) * L, dtype=torch.float64)
    for x in itertools.product(range(V), repeat=L):
        total = 0.0
        for kappa in itertools.product(range(steps), repeat=L):
            path_prob = float(torch.prod(pk[list(kappa)]))
            lik = 1.0
            for k in range(steps):
                rev = [i for i in range(L) if kappa[i] == k]
                if not rev:
                    continue
                x_t = torch.tensor([[x[i] if kappa[i] < k else V for i in range(L)]])
                t = torch.full((1,), float(grid[k]))
                zs = [None] if latents is None else list(latents[k])
                acc = 0.0
                for z in zs:
                    lg = model.logits(x_t, t, None if z is None else z[None])
                    probs = F.softmax(lg.double(), dim=-1)[0]
                    term = 1.0
                    for i in rev:
                        term *= float(probs[i, x[i]])
                    acc += term
                lik *= acc / len(zs)
            total += path_prob * lik
        P[x] = total
    return P


@torch.no_grad()
def valid_bound_enumerated(
    model,
    x0: torch.Tensor,
    steps: int,
    *,
    kl: str = "revealed",
    n_nodes: int = 12,
    schedule: Schedule | None = None,
) -> torch.Tensor:
    """(batch,) nats: ``sum_k sum_{M} P_k(M) [p_k sum_{i in M} E_r -log mu^i + c_k(M) KL_k]``.

    ``P_k(M) = s_k^{|M|} (1 - s_k)^{L - |M|}``, s_k the probability of being still masked at
    t_k; ``c_k(M) = 1 - (1 - p_k)^{|M|}`` (``kl="revealed"``) or 1 (``"every_step"``).
    """
    from vadd.likelihood import gauss_hermite

    schedule = schedule or LogLinearSchedule()
    V, L = model.vocab_size, model.cfg.seq_len
    grid = time_grid(steps)
    p = unmask_probs(schedule, steps).double()
    keep = still_masked_probs(schedule, steps).double()
    eps, w = (None, None)
    if model.latent_dim > 0:
        eps, w = gauss_hermite(model.latent_dim, n_nodes)
    out = torch.zeros(x0.shape[0], dtype=torch.float64)
    for b in range(x0.shape[0]):
        for k in range(steps):
            for pattern in itertools.product((False, True), repeat=L):
                n_m = sum(pattern)
                prob = float(keep[k]) ** n_m * (1.0 - float(keep[k])) ** (L - n_m)
                if prob == 0.0:
                    continue
                x_t = torch.tensor([[V if pattern[i] else int(x0[b, i]) for i in range(L)]])
                t = torch.full((1,), float(grid[k]))
                if eps is None or w is None:
                    lp = F.log_softmax(model.logits(x_t, t).double(), dim=-1)[0]
                    rec = sum(-float(lp[i, int(x0[b, i])]) for i in range(L) if pattern[i])
                    kl_k = 0.0
                else:
                    m, ls = model.posterior(x0[b : b + 1], x_t, t)
                    z = (m.double() + torch.exp(ls.double()) * eps).to(m.dtype)
                    lp = F.log_softmax(model.logits(x_t.expand(len(z), -1), t.expand(len(z)), z)
                                       .double(), dim=-1)  # fmt: skip
                    rec = sum(
                        -float((w * lp[:, i, int(x0[b, i])]).sum()) for i in range(L) if pattern[i]
                    )
                    kl_k = float(gaussian_kl(m.double(), ls.double()))
                c = 1.0 - (1.0 - float(p[k])) ** n_m if kl == "revealed" else 1.0
                out[b] += prob * (float(p[k]) * rec + c * kl_k)
    return out


def delbo_loop(
    model,
    x0: torch.Tensor,
    x_t: torch.Tensor,
    t: torch.Tensor,
    eps: torch.Tensor,
    schedule: Schedule | None = None,
    kl_weight: float = 1.0,
) -> torch.Tensor:
    """Per-example DELBO terms (batch,) ``w(t) (sum_{masked} -log mu[x0] + lambda KL)``.

    eps: (batch, d) standard normal noise, ``z = m + sigma * eps``.
    """
    schedule = schedule or LogLinearSchedule()
    out = []
    for b in range(x0.shape[0]):
        xb, xtb, tb = x0[b : b + 1], x_t[b : b + 1], t[b : b + 1]
        m, ls = model.posterior(xb, xtb, tb)
        sigma = torch.exp(ls)
        z = m + sigma * eps[b : b + 1]
        kl = 0.0
        for j in range(m.shape[1]):
            kl = kl + 0.5 * (m[0, j] ** 2 + sigma[0, j] ** 2 - 1.0) - ls[0, j]
        logp = F.log_softmax(model.logits(xtb, tb, z)[0].float(), dim=-1)
        rec = torch.zeros((), dtype=logp.dtype)
        for i in range(x0.shape[1]):
            if int(xtb[0, i]) == model.mask_id:
                rec = rec - logp[i, int(xb[0, i])]
        out.append(schedule.weight(tb.float())[0] * (rec + kl_weight * kl))
    return torch.stack(out)
