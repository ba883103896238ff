"""Training VADD with the `masked_diffusion` loop (AdamW, warm-up, exact resume, torchrun/DDP).

The loss function reads the KL-annealing factor ``lambda = min(1, step / anneal_steps)`` from
the model's ``anneal_step`` buffer (saved in checkpoints, so a resumed run anneals identically)
and goes through ``model.forward`` so that DDP synchronises gradients.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from masked_diffusion import TrainConfig, TrainResult, get_schedule, train

from vadd.loss import OBJECTIVES, kl_weight


@dataclass(frozen=True)
class ObjectiveConfig:
    """What is optimised: the paper's DELBO (default) or the valid T-step bound.

    anneal_steps: length of the linear KL warm-up (0: lambda = 1 throughout).
    steps: T of ``objective="valid"``.
    """

    objective: str = "paper"
    anneal_steps: int = 0
    steps: int | None = None
    schedule: str = "loglinear"
    analytic_kl: bool = True

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective: expected one of {OBJECTIVES}, got {self.objective!r}")
        if not isinstance(self.anneal_steps, int) or self.anneal_steps < 0:
            raise ValueError(f"anneal_steps: expected an int >= 0, got {self.anneal_steps!r}")
        if self.objective == "valid" and (not isinstance(self.steps, int) or self.steps <= 0):
            raise ValueError(f"steps: objective='valid' needs a positive int, got {self.steps!r}")


def train_vadd(
    model,
    data: torch.Tensor,
    config: TrainConfig,
    objective: ObjectiveConfig | None = None,
    *,
    resume: bool = False,
    stop_at: int | None = None,
) -> TrainResult:
    """Train a `vadd.VADD` on token rows `data` (rows, L); returns per-step losses."""
    objective = objective or ObjectiveConfig()
    schedule = get_schedule(objective.schedule)

    def loss_fn(m: torch.nn.Module, batch: torch.Tensor, g: torch.Generator) -> torch.Tensor:
        core = m.module if hasattr(m, "module") else m
        lam = kl_weight(int(core.anneal_step), objective.anneal_steps)
        core.anneal_step += 1
        return m(
            batch,
            generator=g,
            objective=objective.objective,
            steps=objective.steps,
            schedule=schedule,
            kl_weight=lam,
            analytic_kl=objective.analytic_kl,
        )

    return train(model, loss_fn, data, config, resume=resume, stop_at=stop_at)
