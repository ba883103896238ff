"""Element-wise masking schedules: one time warp ``t -> t^{w_i}`` per atom and bond.

MELD gives every graph element i its own trajectory. Here an element's clean probability is a
`masked_diffusion.Schedule` ``alpha`` evaluated at a warped time,

    alpha_i(t) = alpha(u_i),   u_i = t^{w_i},   w_i > 0,

so with masked_diffusion's log-linear schedule ``alpha_i(t) = 1 - (1 - eps) t^{w_i}``: the
polynomial per-element form of MELD (w_i > 1 keeps element i clean longer, w_i < 1 masks it
early). Every element's mask probability is monotone in t, ``1 - alpha(0)`` at t = 0 and
``1 - alpha(1)`` at t = 1 (0 and 1 with ``eps = 0``). The NELBO weight of element i is

    -alpha_i'(t) / (1 - alpha_i(t)) = w(u_i) * w_i * u_i / t,

with ``w(u) = -alpha'(u) / (1 - alpha(u))`` the base schedule's weight (1/u for log-linear, so
``w_i / t``). With every ``w_i = 1``, ``u_i = t`` and ``w_i u_i / t = 1`` exactly, so the
weights, mask probabilities and hence the loss equal the base schedule's bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from masked_diffusion import LogLinearSchedule, Schedule

PAPER_EPS = 1e-4  # gamma_i(1) = eps (paper note, Key design 2); `MELDConfig.eps`'s default
U_FLOOR = 1e-12  # floor of u_i = t^{w_i} in `ElementwiseSchedule.weight` (non-log-linear bases)


def _check_w(w: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    if not isinstance(w, torch.Tensor) or not torch.is_floating_point(w):
        raise TypeError(f"w: expected a floating torch.Tensor of rates, got {type(w).__name__}")
    if w.ndim != 2 or w.shape[0] != t.shape[0]:
        raise ValueError(f"w: expected shape ({t.shape[0]}, elements), got {tuple(w.shape)}")
    if not bool((w > 0).all()):
        raise ValueError(f"w: rates must be > 0, got minimum {float(w.min())}")
    return w


def _check_t(t: object) -> torch.Tensor:
    if not isinstance(t, torch.Tensor) or not torch.is_floating_point(t) or t.ndim != 1:
        raise TypeError(f"t: expected a (batch,) floating torch.Tensor, got {t!r:.80}")
    return t


@dataclass(frozen=True)
class ElementwiseSchedule:
    """``alpha_i(t) = base.alpha(t^{w_i})``: a `masked_diffusion.Schedule` warped per element.

    Every method takes times ``t`` (batch,) and rates ``w`` (batch, elements) > 0 and returns
    (batch, elements). The default base is the paper's log-linear schedule with
    ``eps = PAPER_EPS = 1e-4`` (masked_diffusion's own default is MDLM's 1e-3); a MELD model's
    schedule is `MELDConfig.schedule()`, built from its config's eps.
    """

    base: Schedule = field(default_factory=lambda: LogLinearSchedule(eps=PAPER_EPS))

    def __post_init__(self) -> None:
        if not isinstance(self.base, Schedule):
            raise TypeError(
                f"base: expected a masked_diffusion.Schedule, got {type(self.base).__name__}"
            )

    def warp(self, t: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """u_i = t^{w_i}, the element's own clock."""
        t = _check_t(t)
        return torch.pow(t[:, None], _check_w(w, t))

    def alpha(self, t: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """Probability that element i is still clean at time t."""
        return self.base.alpha(self.warp(t, w))

    def mask_prob(self, t: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """1 - alpha_i(t), computed as the base schedule does (so w = 1 is bit-identical)."""
        return self.base.mask_prob(self.warp(t, w))

    def weight(self, t: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """NELBO weight ``-alpha_i'(t) / (1 - alpha_i(t)) = base.weight(u_i) w_i u_i / t``.

        ``u_i = t^{w_i}`` underflows to 0 for large rates at small t (float32: t = 1e-3,
        w = 13), where ``base.weight(u) u`` has a finite limit but evaluates to ``inf * 0``
        (and its gradient to ``inf``). For the log-linear base that factor is exactly 1, so the
        weight is ``w_i / t``; for other bases u is floored at `U_FLOOR` inside the factor.
        """
        u = self.warp(t, w)
        if isinstance(self.base, LogLinearSchedule):
            return w / t[:, None]
        u = u.clamp_min(U_FLOOR)
        return self.base.weight(u) * (w * u / t[:, None])

    def unmask_prob(self, t: torch.Tensor, s: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """(alpha_i(s) - alpha_i(t)) / (1 - alpha_i(t)): chance a masked element at t is clean at s < t.

        For the log-linear base this is ``1 - (s / t)^{w_i}`` exactly ((1 - eps) cancels), which
        stays in [0, 1] when ``t^{w_i}`` underflows (large rates); other bases use the ratio.
        """
        if isinstance(self.base, LogLinearSchedule):
            _check_w(w, _check_t(t))
            return 1.0 - torch.pow((s / t)[:, None], w)
        a_t, a_s = self.alpha(t, w), self.alpha(s, w)
        return (a_s - a_t) / (1.0 - a_t)
