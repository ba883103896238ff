"""MOSE: a subjective objective (e.g. interpretability) scored by pairwise judgements.

The paper scores a model by comparing it with a fixed reference set of 3 models: the score is
the mean probability that the judge prefers the candidate, ``s(m) = (1/|R|) sum_{r in R}
P(m > r)``, in ``[0, 1]``; 1 when the candidate beats every reference for sure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from mathmo.tasks.base import ModelCard

Judge = Callable[[ModelCard, ModelCard], float]


def mose_score(candidate: ModelCard, references: Sequence[ModelCard], judge: Judge) -> float:
    """Mean win probability of ``candidate`` against ``references`` under ``judge``."""
    if len(references) == 0:
        raise ValueError("references: expected at least one reference model, got none")
    probs = []
    for ref in references:
        p = float(judge(candidate, ref))
        if not 0.0 <= p <= 1.0 or math.isnan(p):
            raise ValueError(f"judge: expected a probability in [0, 1], got {p}")
        probs.append(p)
    return sum(probs) / len(probs)


def parsimony_judge(
    a: ModelCard, b: ModelCard, scale: float = 4.0, mechanism: float = 1.5
) -> float:
    """The programmatic judge: P(a is more interpretable than b), a Bradley-Terry model on
    ``-n_params / scale + mechanism * mechanistic`` (fewer parameters and a mechanistic
    reading are preferred, as an expert applying Occam's razor would)."""
    za = -a.n_params / scale + mechanism * float(a.mechanistic)
    zb = -b.n_params / scale + mechanism * float(b.mechanistic)
    return 1.0 / (1.0 + math.exp(-(za - zb)))
