"""The search operators, as a protocol, and the programmatic (no-LLM) implementation.

MATHMO uses an LLM in four roles: proposing frameworks, generating candidate models within a
framework given its history ``S^f``, predicting a candidate's objectives before it is run (the
surrogate), and judging pairs of models on a subjective criterion. `Operators` is that
interface; `ProgrammaticOperators` fills it without a language model so that the search itself
can be measured: it samples from each task's library of real model families (grid neighbours of
the framework's non-dominated models, and fresh draws), predicts with a distance-weighted k-NN
over the framework's evaluated grid positions, and judges with `mathmo.mose.parsimony_judge` (or the ``judge`` given,
e.g. `mathmo.judge.SmolLMJudge`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mathmo.mose import parsimony_judge
from mathmo.pareto import non_dominated
from mathmo.tasks.base import Candidate, ModelCard, Task, encode


@dataclass(frozen=True)
class Evaluation:
    """One executed candidate: its round, raw measurements and normalised objectives ``y``
    (zeros when it failed, so failures pull a framework's UCB down)."""

    round: int
    candidate: Candidate
    y: np.ndarray
    failed: bool = False
    error: str = ""
    raw: tuple[tuple[str, float], ...] = ()
    predicted: np.ndarray | None = None


class Operators(Protocol):
    """The four operator roles of the search (an LLM backend or `ProgrammaticOperators`)."""

    def propose_frameworks(self, task: Task, n: int, rng: np.random.Generator) -> list[str]:
        """Up to ``n`` framework names for the problem."""
        ...

    def propose_candidates(
        self,
        task: Task,
        framework: str,
        history: list[Evaluation],
        l: int,
        rng: np.random.Generator,
    ) -> list[Candidate]:
        """``l`` candidates ``(m, a)`` in ``framework`` given its history ``S^f``."""
        ...

    def predict_objectives(
        self, task: Task, candidates: list[Candidate], history: list[Evaluation]
    ) -> np.ndarray:
        """Predicted normalised objectives, shape ``(len(candidates), k)``."""
        ...

    def judge_pair(self, a: ModelCard, b: ModelCard) -> float:
        """P(``a`` is preferred to ``b``) on the subjective criterion."""
        ...


class ProgrammaticOperators:
    """Library sampling + k-NN surrogate + parsimony judge (the embedded default).

    neighbours: candidates derived from the framework's non-dominated models by moving one grid
    key one step (the refinement move); the rest are uniform draws from the grid. Already
    evaluated candidates are avoided while unevaluated ones remain. k: neighbours of the k-NN.
    """

    def __init__(
        self,
        neighbour_fraction: float = 0.5,
        k: int = 3,
        judge: Callable[[ModelCard, ModelCard], float] | None = None,
    ) -> None:
        if not 0.0 <= neighbour_fraction <= 1.0:
            raise ValueError(
                f"neighbour_fraction: expected a value in [0, 1], got {neighbour_fraction}"
            )
        if k < 1:
            raise ValueError(f"k: expected a positive int, got {k}")
        self.neighbour_fraction = neighbour_fraction
        self.k = k
        self.judge = judge or parsimony_judge

    def propose_frameworks(self, task: Task, n: int, rng: np.random.Generator) -> list[str]:
        return [f.name for f in task.frameworks[:n]]

    def propose_candidates(
        self,
        task: Task,
        framework: str,
        history: list[Evaluation],
        l: int,
        rng: np.random.Generator,
    ) -> list[Candidate]:
        fw = task.framework(framework)
        own = [e for e in history if e.candidate.framework == framework]
        seen = {e.candidate for e in own}
        keys = list(fw.grid)
        out: list[Candidate] = []
        good = [e for e in own if not e.failed]
        if good:
            mask = non_dominated(np.stack([e.y for e in good]))
            parents = [e.candidate for e, m in zip(good, mask, strict=True) if m]
        else:
            parents = []
        total = fw.size()
        for i in range(l):
            cand = None
            if parents and keys and i < round(self.neighbour_fraction * l):
                for _ in range(8):
                    p = parents[int(rng.integers(len(parents)))]
                    key = keys[int(rng.integers(len(keys)))]
                    values = fw.grid[key]
                    j = values.index(p.get(key)) + (1 if rng.random() < 0.5 else -1)
                    if 0 <= j < len(values):
                        c = Candidate.of(framework, **{**dict(p.params), key: values[j]})
                        if c not in seen or len(seen) >= total:
                            cand = c
                            break
            for _ in range(16 if cand is None else 0):
                c = Candidate.of(
                    framework, **{k: v[int(rng.integers(len(v)))] for k, v in fw.grid.items()}
                )
                cand = c
                if c not in seen or len(seen) >= total:
                    break
            assert cand is not None
            out.append(cand)
            seen.add(cand)
        return out

    def predict_objectives(
        self, task: Task, candidates: list[Candidate], history: list[Evaluation]
    ) -> np.ndarray:
        k_obj = len(task.objectives)
        prior = np.mean([e.y for e in history], axis=0) if history else np.full(k_obj, 0.5)
        out = np.empty((len(candidates), k_obj))
        for i, c in enumerate(candidates):
            fw = task.framework(c.framework)
            own = [e for e in history if e.candidate.framework == c.framework]
            if not own:
                out[i] = prior
                continue
            x = encode(fw, c)
            feats = np.stack([encode(fw, e.candidate) for e in own])
            d = np.sqrt(((feats - x) ** 2).sum(axis=1)) if x.size else np.zeros(len(own))
            nearest = np.argsort(d, kind="stable")[: self.k]
            w = 1.0 / (d[nearest] + 1e-3)  # an exact grid match dominates the average
            out[i] = (w[:, None] * np.stack([own[j].y for j in nearest])).sum(axis=0) / w.sum()
        return out

    def judge_pair(self, a: ModelCard, b: ModelCard) -> float:
        return self.judge(a, b)


def grid_candidates(task: Task, framework: str) -> list[Candidate]:
    """Every candidate of a framework's grid (for exhaustive baselines and tests)."""
    fw = task.framework(framework)
    keys = list(fw.grid)
    return [
        Candidate.of(framework, **dict(zip(keys, vals, strict=True)))
        for vals in itertools.product(*fw.grid.values())
    ]
