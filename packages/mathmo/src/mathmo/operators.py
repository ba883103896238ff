"""The search operators, as a protocol, and the programmatic (no-LLM) implementation.

MATHMO uses an LLM in four roles: proposing frameworks, generating candidate models within a
framework given its history ``S^f``, predicting a candidate's objectives before it is run (the
surrogate), and judging pairs of models on a subjective criterion. `Operators` is that
interface; `ProgrammaticOperators` fills it without a language model so that the search itself
can be measured: it mutates the framework's non-dominated models (off the task's grid: the
generator's space is open, as an LLM writing code is) and draws fresh models from the grid,
predicts with a bagged distance-weighted k-NN over the framework's evaluated models (each call
one bootstrap estimate, so the search's ``q`` estimates differ as an LLM's samples do), repairs a
failed model by mutating it (the stand-in for LLM self-correction), and judges with
`mathmo.mose.parsimony_judge` (or the ``judge`` given, e.g. `mathmo.judge.SmolLMJudge`).
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
    repaired: tuple[Candidate, ...] = ()  # failed candidates this round tried first (retries)


class Operators(Protocol):
    """The operator roles of the search (an LLM backend or `ProgrammaticOperators`)."""

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
        self,
        task: Task,
        candidates: list[Candidate],
        history: list[Evaluation],
        rng: np.random.Generator,
    ) -> np.ndarray:
        """One surrogate estimate of the normalised objectives, ``(len(candidates), k)``; the
        search asks ``q`` times and averages."""
        ...

    def repair_candidate(
        self,
        task: Task,
        candidate: Candidate,
        error: str,
        history: list[Evaluation],
        rng: np.random.Generator,
    ) -> Candidate:
        """A corrected candidate after ``candidate`` failed with ``error`` (self-correction)."""
        ...

    def judge_pair(self, a: ModelCard, b: ModelCard) -> float:
        """P(``a`` is preferred to ``b``) on the subjective criterion."""
        ...


class ProgrammaticOperators:
    """Mutation + fresh draws, bagged k-NN surrogate, mutation repair, parsimony judge.

    neighbour_fraction: share of the ``l`` candidates that are mutations of the framework's
    non-dominated models (one key moved by a Gaussian step of ``step`` grid intervals; numeric
    keys land anywhere between the grid's extremes when ``space="open"``, or on the nearest grid
    value when ``space="grid"``: a closed library, as in 0.1.0); the rest are uniform grid draws.
    k: neighbours of the k-NN. bootstrap: each surrogate call resamples the framework's history
    with replacement (``False``: the deterministic k-NN of 0.1.0, so ``q`` estimates agree).
    """

    def __init__(
        self,
        neighbour_fraction: float = 0.5,
        k: int = 3,
        judge: Callable[[ModelCard, ModelCard], float] | None = None,
        space: str = "open",
        step: float = 1.0,
        bootstrap: bool = True,
    ) -> None:
        if not 0.0 <= neighbour_fraction <= 1.0:
            raise ValueError(
                f"neighbour_fraction: expected a value in [0, 1], got {neighbour_fraction}"
            )
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"k: expected a positive int, got {k!r}")
        if space not in ("open", "grid"):
            raise ValueError(f"space: expected 'open' or 'grid', got {space!r}")
        if not np.isfinite(step) or step <= 0:
            raise ValueError(f"step: expected a finite number of grid intervals > 0, got {step}")
        self.neighbour_fraction = neighbour_fraction
        self.k = int(k)
        self.judge = judge or parsimony_judge
        self.space = space
        self.step = float(step)
        self.bootstrap = bootstrap

    def propose_frameworks(self, task: Task, n: int, rng: np.random.Generator) -> list[str]:
        return [f.name for f in task.frameworks[:n]]

    def mutate(self, task: Task, parent: Candidate, rng: np.random.Generator) -> Candidate | None:
        """``parent`` with one key moved (None when the move left the key unchanged)."""
        fw = task.framework(parent.framework)
        movable = [key for key, values in fw.grid.items() if len(values) > 1]
        if not movable:
            return None
        key = movable[int(rng.integers(len(movable)))]
        pos = fw.position(key, parent.get(key))
        if fw.is_numeric(key):
            u = pos + self.step * float(rng.standard_normal())
            new = fw.value_at(key, round(u) if self.space == "grid" else u)
        else:
            j = round(pos) + (1 if rng.random() < 0.5 else -1)
            if not 0 <= j < len(fw.grid[key]):
                return None
            new = fw.grid[key][j]
        if new == parent.get(key):
            return None
        return Candidate.of(parent.framework, **{**dict(parent.params), key: new})

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
        seen = {e.candidate for e in own} | {c for e in own for c in e.repaired}
        good = [e for e in own if not e.failed]
        parents: list[Candidate] = []
        if good:
            mask = non_dominated(np.stack([e.y for e in good]))
            parents = [e.candidate for e, m in zip(good, mask, strict=True) if m]
        exhausted = self.space == "grid" and len(seen) >= fw.size()
        out: list[Candidate] = []
        for i in range(l):
            cand = None
            if parents and i < round(self.neighbour_fraction * l):
                for _ in range(8):
                    c = self.mutate(task, parents[int(rng.integers(len(parents)))], rng)
                    if c is not None and (c not in seen or exhausted):
                        cand = c
                        break
            for _ in range(16 if cand is None else 0):
                cand = Candidate.of(
                    framework, **{k: v[int(rng.integers(len(v)))] for k, v in fw.grid.items()}
                )
                if cand not in seen or len(seen) >= fw.size():
                    break
            assert cand is not None
            out.append(cand)
            seen.add(cand)
        return out

    def predict_objectives(
        self,
        task: Task,
        candidates: list[Candidate],
        history: list[Evaluation],
        rng: np.random.Generator,
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
            if self.bootstrap:
                own = [own[j] for j in rng.integers(len(own), size=len(own))]
            x = encode(fw, c)
            feats = np.stack([encode(fw, e.candidate) for e in own])
            d = np.sqrt(((feats - x) ** 2).sum(axis=1)) if x.size else np.zeros(len(own))
            nearest = np.argsort(d, kind="stable")[: self.k]
            w = 1.0 / (d[nearest] + 1e-3)  # an exact match dominates the average
            out[i] = (w[:, None] * np.stack([own[j].y for j in nearest])).sum(axis=0) / w.sum()
        return out

    def repair_candidate(
        self,
        task: Task,
        candidate: Candidate,
        error: str,
        history: list[Evaluation],
        rng: np.random.Generator,
    ) -> Candidate:
        """A mutation of the failed candidate (a fresh grid draw if no key can move): without a
        language model the error text cannot be read, only the model changed."""
        for _ in range(8):
            c = self.mutate(task, candidate, rng)
            if c is not None:
                return c
        return self.propose_candidates(task, candidate.framework, history, 1, rng)[0]

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
