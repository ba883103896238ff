"""The CROME training objective (paper Sec. 4, "composite loss"): Bradley-Terry on preference
and causal pairs, plus a tie term on neutral pairs, weighted by lambda.

With reward margins Delta = R(Q, A_w) - R(Q, A_l) (preference) and Delta = R(Q, A_1) - R(Q, A_2)
(tie), the loss of one batch is

    L(theta) = sum_{D_pref u D_causal} -log sigma(Delta_wl)
             + lambda * sum_{D_neutral} [ -1/2 log sigma(Delta_12) - 1/2 log sigma(-Delta_12) ].

The tie term is binary cross-entropy against the target P(A_1 > A_2) = 1/2: its minimum is
log 2 at Delta = 0 and its gradient is sigma(Delta) - 1/2. `reference.py` has the same maths
element by element in plain Python floats.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

LOG2 = math.log(2.0)


def _check_margin(delta: torch.Tensor, name: str) -> None:
    if not isinstance(delta, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor of reward margins, got {type(delta)}")
    if delta.ndim != 1:
        raise ValueError(f"{name}: expected shape (pairs,), got {tuple(delta.shape)}")
    if not torch.is_floating_point(delta):
        raise TypeError(f"{name}: expected a floating-point tensor, got {delta.dtype}")
    if not torch.isfinite(delta).all():
        raise ValueError(f"{name}: contains NaN or infinite reward margins")


def bradley_terry_loss(delta: torch.Tensor) -> torch.Tensor:
    """Per-pair Bradley-Terry loss ``-log sigma(Delta_wl)``; `delta` has shape ``(pairs,)``.

    Computed with ``logsigmoid`` (exact and overflow-free for any margin; ``softplus`` would
    switch to a linear approximation beyond its threshold).
    """
    _check_margin(delta, "delta")
    return -F.logsigmoid(delta)


def tie_loss(delta: torch.Tensor) -> torch.Tensor:
    """Per-pair tie loss ``-1/2 log sigma(Delta_12) - 1/2 log sigma(-Delta_12)``, shape ``(pairs,)``.

    Symmetric in the order of the two answers and minimised (value log 2) at ``Delta_12 = 0``.
    """
    _check_margin(delta, "delta")
    return -0.5 * (F.logsigmoid(delta) + F.logsigmoid(-delta))


def crome_loss(
    delta_pref: torch.Tensor, delta_tie: torch.Tensor, lam: float = 1.0, reduction: str = "mean"
) -> torch.Tensor:
    """The composite objective: BT on `delta_pref`, ``lam`` times the tie term on `delta_tie`.

    ``reduction="sum"`` is the paper's sum over pairs; ``"mean"`` divides it by the number of
    pairs of both kinds together (what the trainer uses, so the step size does not depend on
    the batch size). Either tensor may be empty. The paper uses ``lam = 1``.
    """
    if not math.isfinite(lam) or lam < 0:
        raise ValueError(f"lam: expected a finite non-negative weight, got {lam}")
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction: expected 'mean' or 'sum', got {reduction!r}")
    total = bradley_terry_loss(delta_pref).sum() + lam * tie_loss(delta_tie).sum()
    if reduction == "sum":
        return total
    n = delta_pref.numel() + delta_tie.numel()
    if n == 0:
        raise ValueError("delta_pref, delta_tie: both are empty; expected at least one pair")
    return total / n
