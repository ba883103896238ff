"""Training VADD through `shared_core.train.fit`: the objective and its ``loss_fn``.

Batches are `masked_diffusion.row_batches` (rows drawn by ``(seed, step)``); the loss noise
(times, masks, latents) comes from ``masked_diffusion.noise_generator(batch)`` and the KL
annealing factor ``lambda = min(1, step / anneal_steps)`` from the batch's step, so a resumed
run anneals and draws exactly as an uninterrupted one. The loss goes through
``model.forward`` so that DDP synchronises gradients.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from masked_diffusion import get_schedule, noise_generator

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
        if (
            isinstance(self.anneal_steps, bool)
            or not isinstance(self.anneal_steps, int)
            or self.anneal_steps < 0
        ):
            raise ValueError(f"anneal_steps: expected an int >= 0, got {self.anneal_steps!r}")
        if self.objective == "valid" and (not isinstance(self.steps, int) or self.steps <= 0):
            raise ValueError(f"steps: objective='valid' needs a positive int, got {self.steps!r}")
        try:
            get_schedule(self.schedule)
        except ValueError:
            raise ValueError(
                f"schedule: expected 'loglinear' or 'cosine', got {self.schedule!r}"
            ) from None


def vadd_loss_fn(
    objective: ObjectiveConfig | None = None,
) -> Callable[[torch.nn.Module, dict[str, Any]], torch.Tensor]:
    """``loss_fn(model, batch)`` for `shared_core.train.fit` with `masked_diffusion.row_batches`."""
    objective = objective or ObjectiveConfig()
    if not isinstance(objective, ObjectiveConfig):
        raise TypeError(f"objective: expected an ObjectiveConfig, got {type(objective).__name__}")
    schedule = get_schedule(objective.schedule)

    def loss_fn(model: torch.nn.Module, batch: dict[str, Any]) -> torch.Tensor:
        x0 = batch["x0"]
        loss: torch.Tensor = model(
            x0,
            generator=noise_generator(batch, x0.device),
            objective=objective.objective,
            steps=objective.steps,
            schedule=schedule,
            kl_weight=kl_weight(int(batch["step"]), objective.anneal_steps),
            analytic_kl=objective.analytic_kl,
        )
        return loss

    return loss_fn
