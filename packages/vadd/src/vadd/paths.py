"""The time grid of the T-step ancestral sampler as a path distribution (shared by bounds/oracles).

`masked_diffusion.ancestral_sample` goes from ``t_0 = 1`` to ``t_T = 0`` on ``time_grid(T)`` and
unmasks each masked token at step k with probability ``p_k = unmask_prob(t_k, t_{k+1})``
(``p_{T-1} = 1``). Given x0 the forward process restricted to this grid is the same per-token
Markov chain, so the step ``kappa_i`` at which token i is revealed has
``P(kappa_i = k) = prod_{j<k} (1 - p_j) * p_k``.
"""

from __future__ import annotations

import torch
from masked_diffusion import Schedule, time_grid


def unmask_probs(schedule: Schedule, steps: int) -> torch.Tensor:
    """``p_k``, (steps,), exactly as the sampler computes it (the last one is 1)."""
    ts = time_grid(steps)
    p = [float(schedule.unmask_prob(ts[i], ts[i + 1])) for i in range(steps - 1)]
    return torch.tensor([*p, 1.0], dtype=torch.float64).float()


def still_masked_probs(schedule: Schedule, steps: int) -> torch.Tensor:
    """``P(token masked at t_k) = prod_{j<k} (1 - p_j)``, (steps,); 1 at k = 0."""
    p = unmask_probs(schedule, steps).double()
    keep = torch.cumprod(torch.cat([torch.ones(1, dtype=p.dtype), 1.0 - p[:-1]]), dim=0)
    return keep.float()


def reveal_step_probs(schedule: Schedule, steps: int) -> torch.Tensor:
    """``P(kappa = k)``, (steps,), sums to 1."""
    return still_masked_probs(schedule, steps) * unmask_probs(schedule, steps)
