"""Slow, obviously-correct forms of CROME's maths, one pair at a time in Python floats.

These are the oracles the tests compare the vectorised forms against: the losses of
`crome.losses`, the batched reward scoring of `crome.model.RewardModel.score`, and the
RewardBench section weighting of `crome.evaluate`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


def sigmoid(x: float) -> float:
    """sigma(x) = 1 / (1 + exp(-x)), evaluated on the side that does not overflow."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def bradley_terry_loss(delta: float) -> float:
    """-log sigma(Delta_wl) for one preference pair."""
    return -math.log(sigmoid(delta)) if delta > -30 else -delta


def bradley_terry_grad(delta: float) -> float:
    """d/dDelta of -log sigma(Delta) = sigma(Delta) - 1."""
    return sigmoid(delta) - 1.0


def tie_loss(delta: float) -> float:
    """-1/2 log sigma(Delta_12) - 1/2 log sigma(-Delta_12) for one tie pair."""
    return 0.5 * bradley_terry_loss(delta) + 0.5 * bradley_terry_loss(-delta)


def tie_grad(delta: float) -> float:
    """d/dDelta of the tie loss = sigma(Delta) - 1/2."""
    return sigmoid(delta) - 0.5


def crome_loss(
    delta_pref: Sequence[float],
    delta_tie: Sequence[float],
    lam: float = 1.0,
    reduction: str = "mean",
) -> float:
    """The composite loss as an explicit sum over pairs (see `crome.losses.crome_loss`)."""
    total = 0.0
    for d in delta_pref:
        total += bradley_terry_loss(d)
    for d in delta_tie:
        total += lam * tie_loss(d)
    if reduction == "sum":
        return total
    return total / (len(delta_pref) + len(delta_tie))


def score_one_by_one(model: Any, prompts: Sequence[str], answers: Sequence[str]) -> list[float]:
    """Rewards R(Q, A) computed with a batch of one: no padding can leak into the result."""
    return [
        float(model.score([q], [a], batch_size=1)[0]) for q, a in zip(prompts, answers, strict=True)
    ]


def section_scores(
    accuracy: Mapping[str, float], counts: Mapping[str, int], mapping: Mapping[str, Sequence[str]]
) -> dict[str, float]:
    """Per-section score sum_s acc_s n_s / sum_s n_s over the subsets present, with a loop."""
    out = {}
    for section, subsets in mapping.items():
        num = 0.0
        den = 0
        for s in subsets:
            if s in accuracy:
                num += accuracy[s] * counts[s]
                den += counts[s]
        if den:
            out[section] = num / den
    return out
