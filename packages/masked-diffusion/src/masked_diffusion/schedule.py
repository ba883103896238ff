"""Noise schedules alpha_t of the absorbing-state (masked) diffusion, MDLM Sec. 3.

A schedule maps t in [0, 1] to the probability ``alpha_t`` that a token is still clean
(``alpha_0 ~ 1``, ``alpha_1 ~ 0``), its derivative ``alpha'_t``, and the continuous-time NELBO
weight ``w(t) = -alpha'_t / (1 - alpha_t)`` (MDLM Eq. 10, with the sign folded in so w >= 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


def _check_t(t: torch.Tensor) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"t: expected a torch.Tensor, got {type(t).__name__}")
    if not torch.is_floating_point(t):
        raise TypeError(f"t: expected a floating tensor, got dtype {t.dtype}")
    if torch.isnan(t).any():
        raise ValueError("t: contains NaN")
    return t


@dataclass(frozen=True)
class Schedule:
    """Base class: subclasses define `alpha` and `dalpha` on t in [0, 1]."""

    eps: float = 1e-3

    def __post_init__(self) -> None:
        if not 0.0 <= self.eps < 1.0:
            raise ValueError(f"eps: expected 0 <= eps < 1, got {self.eps!r}")

    def alpha(self, t: torch.Tensor) -> torch.Tensor:
        """alpha_t, the probability that a token is unmasked at time t."""
        raise NotImplementedError

    def dalpha(self, t: torch.Tensor) -> torch.Tensor:
        """d alpha_t / dt (<= 0)."""
        raise NotImplementedError

    def mask_prob(self, t: torch.Tensor) -> torch.Tensor:
        """1 - alpha_t, the probability that a token is masked at time t."""
        return 1.0 - self.alpha(t)

    def weight(self, t: torch.Tensor) -> torch.Tensor:
        """w(t) = -alpha'_t / (1 - alpha_t): the NELBO weight of MDLM Eq. 10 (>= 0)."""
        return -self.dalpha(t) / (1.0 - self.alpha(t))

    def unmask_prob(self, t: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        """(alpha_s - alpha_t) / (1 - alpha_t): chance a masked token at t is revealed by s < t."""
        return (self.alpha(s) - self.alpha(t)) / (1.0 - self.alpha(t))


@dataclass(frozen=True)
class LogLinearSchedule(Schedule):
    """alpha_t = 1 - (1 - eps) t, MDLM's ``LogLinearNoise`` (sigma_t = -log alpha_t).

    The NELBO weight is exactly 1/t: w(t) = (1 - eps) / ((1 - eps) t).
    """

    def alpha(self, t: torch.Tensor) -> torch.Tensor:
        return 1.0 - (1.0 - self.eps) * _check_t(t)

    def dalpha(self, t: torch.Tensor) -> torch.Tensor:
        return torch.full_like(_check_t(t), -(1.0 - self.eps))

    def weight(self, t: torch.Tensor) -> torch.Tensor:
        return 1.0 / _check_t(t)


@dataclass(frozen=True)
class CosineSchedule(Schedule):
    """alpha_t = eps + (1 - eps) cos(pi t / 2), so alpha_0 = 1 and alpha_1 = eps.

    The mask rate 1 - alpha_t follows the MaskGIT cosine curve (Chang et al. 2022).
    """

    def alpha(self, t: torch.Tensor) -> torch.Tensor:
        return self.eps + (1.0 - self.eps) * torch.cos(0.5 * math.pi * _check_t(t))

    def dalpha(self, t: torch.Tensor) -> torch.Tensor:
        return -(1.0 - self.eps) * 0.5 * math.pi * torch.sin(0.5 * math.pi * _check_t(t))


SCHEDULES: dict[str, type[Schedule]] = {"loglinear": LogLinearSchedule, "cosine": CosineSchedule}


def get_schedule(name: str, eps: float = 1e-3) -> Schedule:
    """Schedule by name: ``"loglinear"`` (MDLM default) or ``"cosine"``."""
    if name not in SCHEDULES:
        raise ValueError(f"name: expected one of {sorted(SCHEDULES)}, got {name!r}")
    return SCHEDULES[name](eps=eps)
