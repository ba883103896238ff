"""The MATHMO bi-level search and its three ablations.

Upper level (which framework): Pareto-UCB. For framework ``f`` and objective ``j`` with ``N_f``
evaluations out of ``N`` (normalised objectives, higher is better; a failed run counts as 0)

    UCB_{f,j} = mu_{f,j} + c * sqrt(sigma^2_{f,j} * ln N / N_f) + d * sqrt(ln N / N_f)

Unvisited frameworks are chosen first; afterwards one framework is drawn uniformly among those
whose UCB vectors are non-dominated.

Lower level (which model within ``f``): the generator proposes ``l = 3`` candidates given the
framework's history ``S^f``, the surrogate predicts each one's objective vector ``q = 3`` times
(the estimates are averaged), and the one with the largest predicted hypervolume gain over the
current front (reference point 0, i.e. 1 in the minimised raw scale) is executed. When no
prediction adds volume, the one closest to the front (smallest additive epsilon by which the
front still covers it) is taken. A candidate whose execution fails is repaired by the operator
and re-run, up to ``retries = 2`` times (the paper's self-correction loop, App. C.3); a round
whose last attempt still fails scores 0. ``l``, ``q`` and the retry loop are from the paper's
reviews; the number of retries and how the ``q`` estimates combine are not stated (see README).

Variants (the paper's ablations): ``mathmo`` (both levels), ``ran`` (upper level replaced by a
uniformly random framework), ``flat`` (no upper level: the ``l`` candidates come from uniformly
drawn frameworks, the lower level picks among them), ``naive`` (no surrogate: a random one of
the ``l`` candidates is executed).

Random streams: framework choices use one generator, candidate generation and naive picks
another, both spawned from the seed, so with a single framework ``mathmo`` and ``flat`` make
identical choices (tested).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from mathmo._checks import as_points, nonneg_float, positive_int
from mathmo.mose import mose_score
from mathmo.operators import Evaluation, Operators, ProgrammaticOperators
from mathmo.pareto import hypervolume, hypervolume_gain, non_dominated
from mathmo.sandbox import SandboxResult, run_inline, run_sandboxed
from mathmo.tasks.base import Candidate, Task

VARIANTS = ("mathmo", "ran", "flat", "naive")


@dataclass(frozen=True)
class SearchConfig:
    """One search run: 5 initial frameworks, 20 rounds, ``l = 3`` candidates with ``q = 3``
    surrogate estimates each and a retry loop on failures, as the paper and its reviews give;
    ``c``, ``d`` and the retry count are not stated there (see the README). 0.1.0's settings:
    ``SearchConfig(l=5, q=1, retries=0)`` with ``ProgrammaticOperators(space="grid",
    bootstrap=False)``."""

    rounds: int = 20  # executed rounds (the paper's T)
    frameworks: int = 5  # frameworks proposed at the start
    l: int = 3  # candidates generated per round, one executed
    q: int = 3  # surrogate estimates per candidate, averaged
    retries: int = 2  # repairs of a failed candidate before the round scores 0
    c: float = 0.5  # weight of the variance term of Pareto-UCB
    d: float = 0.3  # weight of the count term of Pareto-UCB
    variant: str = "mathmo"  # one of VARIANTS
    time_limit: float = 300.0  # sandbox limit per candidate, seconds (the paper's 300 s)
    sandbox: bool = True  # False: run candidates in-process (trusted operators only)

    def __post_init__(self) -> None:
        positive_int("rounds", self.rounds)
        positive_int("frameworks", self.frameworks)
        positive_int("l", self.l)
        positive_int("q", self.q)
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"retries: expected an int >= 0, got {self.retries!r}")
        nonneg_float("c", self.c)
        nonneg_float("d", self.d)
        if self.variant not in VARIANTS:
            raise ValueError(f"variant: expected one of {VARIANTS}, got {self.variant!r}")
        if nonneg_float("time_limit", self.time_limit) <= 0:
            raise ValueError(f"time_limit: expected > 0 seconds, got {self.time_limit}")


def pareto_ucb(values: dict[str, list[np.ndarray]], c: float, d: float) -> dict[str, np.ndarray]:
    """UCB vector per visited framework from its normalised objective vectors (see module doc).

    values: framework name -> list of ``(k,)`` objective vectors (an empty list: unvisited).
    """
    if not isinstance(values, dict):
        raise TypeError(
            f"values: expected a dict of framework name -> list of objective vectors, "
            f"got {type(values).__name__}"
        )
    nonneg_float("c", c)
    nonneg_float("d", d)
    stacked = {}
    for name, ys in values.items():
        try:
            y = np.stack([np.asarray(v, dtype=np.float64) for v in ys]) if len(ys) else None
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"values[{name!r}]: expected a list of equal-length objective vectors ({err})"
            ) from err
        stacked[name] = np.zeros((0, 1)) if y is None else as_points(f"values[{name!r}]", y)
    widths = {y.shape[1] for y in stacked.values() if len(y)}
    if len(widths) > 1:
        raise ValueError(
            f"values: expected objective vectors of one length, got lengths {sorted(widths)}"
        )
    n_total = sum(len(v) for v in values.values())
    out = {}
    for name, y in stacked.items():
        if not len(y):
            continue
        n_f = len(y)
        log_n = math.log(max(n_total, 1))
        out[name] = (
            y.mean(axis=0) + c * np.sqrt(y.var(axis=0) * log_n / n_f) + d * math.sqrt(log_n / n_f)
        )
    return out


def select_framework(
    frameworks: list[str], history: list[Evaluation], c: float, d: float, rng: np.random.Generator
) -> str:
    """Upper level: an unvisited framework if any, else uniform over non-dominated UCB vectors."""
    if len(frameworks) == 0:
        raise ValueError("frameworks: expected at least one framework name, got none")
    values: dict[str, list[np.ndarray]] = {f: [] for f in frameworks}
    for e in history:
        if e.candidate.framework in values:
            values[e.candidate.framework].append(e.y)
    unvisited = [f for f in frameworks if not values[f]]
    if unvisited:
        return unvisited[int(rng.integers(len(unvisited)))]
    ucb = pareto_ucb(values, c, d)
    names = list(ucb)
    mask = non_dominated(np.stack([ucb[n] for n in names]))
    best = [n for n, m in zip(names, mask, strict=True) if m]
    return best[int(rng.integers(len(best)))]


def acquisition(front: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """Score per predicted vector: its hypervolume gain, or minus its epsilon distance to the
    front when no candidate adds volume (so the choice is never arbitrary)."""
    gains = (
        np.array([hypervolume_gain(front, p) for p in predicted])
        if len(front)
        else np.array([hypervolume(p[None]) for p in predicted])
    )
    if np.any(gains > 1e-12) or len(front) == 0:
        return gains
    eps = np.array([np.min(np.max(front - p, axis=1)) for p in predicted])
    return -eps


@dataclass
class Evaluator:
    """Runs candidates of one task (sandboxed or inline) and maps them to normalised objectives.

    Results are cached per candidate: the programmatic library is deterministic given its
    settings, so repeated seeds and ablations share executions (runtimes are measured once).
    """

    task: Task
    judge: Callable[..., float]
    sandbox: bool = True
    time_limit: float = 300.0
    cache: dict[Candidate, Evaluation] = field(default_factory=dict)

    def __call__(self, candidate: Candidate, round_: int) -> Evaluation:
        if candidate not in self.cache:
            self.cache[candidate] = self._run(candidate)
        e = self.cache[candidate]
        return Evaluation(round_, candidate, e.y, e.failed, e.error, e.raw)

    def _run(self, candidate: Candidate) -> Evaluation:
        k = len(self.task.objectives)
        res: SandboxResult = (
            run_sandboxed(self.task.evaluate, (candidate,), self.time_limit)
            if self.sandbox
            else run_inline(self.task.evaluate, (candidate,))
        )
        if not res.ok:
            return Evaluation(-1, candidate, np.zeros(k), True, res.error)
        raw = res.value
        if not isinstance(raw, dict) or not all(
            isinstance(v, numbers.Real) and math.isfinite(v) for v in raw.values()
        ):
            return Evaluation(
                -1, candidate, np.zeros(k), True, f"non-finite or malformed result {raw!r}"
            )
        raw = {key: float(v) for key, v in raw.items()}  # numpy scalars included
        subjective = None
        if self.task.subjective:
            subjective = mose_score(
                self.task.card(candidate, raw), self.task.references(), self.judge
            )
        y = np.asarray(self.task.normalise(raw, subjective), dtype=np.float64)
        if y.shape != (k,) or not np.all(np.isfinite(y)):
            return Evaluation(
                -1, candidate, np.zeros(k), True, f"normalised objectives not finite: {y}"
            )
        if np.any(y < -1e-9) or np.any(y > 1 + 1e-9):
            raise ValueError(
                f"{type(self.task).__name__}.normalise: expected objectives in [0, 1], higher is "
                f"better, got {y.tolist()} for {candidate.label()}: map costs and errors to "
                "MATHMO's maximised unit box (see mathmo.tasks.base.gap_quality / accuracy)"
            )
        return Evaluation(
            -1, candidate, np.clip(y, 0.0, 1.0), False, "", tuple(sorted(raw.items()))
        )


@dataclass
class SearchResult:
    """All evaluations in order; the front is the non-dominated set of the successful ones."""

    task: str
    variant: str
    evaluations: list[Evaluation]

    def points(self) -> np.ndarray:
        ok = [e.y for e in self.evaluations if not e.failed]
        return (
            np.stack(ok)
            if ok
            else np.zeros((0, len(self.evaluations[0].y) if self.evaluations else 1))
        )

    def front(self) -> list[Evaluation]:
        """The non-dominated successful evaluations, each candidate once (its first round)."""
        ok = list({e.candidate: e for e in reversed(self.evaluations) if not e.failed}.values())
        ok.sort(key=lambda e: e.round)
        if not ok:
            return []
        mask = non_dominated(np.stack([e.y for e in ok]))
        return [e for e, m in zip(ok, mask, strict=True) if m]

    def hypervolume(self) -> float:
        pts = self.points()
        return hypervolume(pts) if len(pts) else 0.0

    def trace(self) -> list[float]:
        """Hypervolume after each round."""
        out, pts = [], []
        for e in self.evaluations:
            if not e.failed:
                pts.append(e.y)
            out.append(hypervolume(np.stack(pts)) if pts else 0.0)
        return out

    def framework_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for e in self.evaluations:
            counts[e.candidate.framework] = counts.get(e.candidate.framework, 0) + 1
        return counts


def run_search(
    task: Task,
    config: SearchConfig | None = None,
    operators: Operators | None = None,
    seed: int = 0,
    evaluator: Evaluator | None = None,
) -> SearchResult:
    """Run MATHMO (or an ablation, ``config.variant``) on ``task`` for ``config.rounds`` rounds."""
    if not isinstance(task, Task):
        raise TypeError(f"task: expected a mathmo.tasks.Task, got {type(task).__name__}")
    config = config or SearchConfig()
    ops: Operators = operators or ProgrammaticOperators()
    if evaluator is None:
        evaluator = Evaluator(task, ops.judge_pair, config.sandbox, config.time_limit)
    elif evaluator.task is not task:
        raise ValueError("evaluator: expected an Evaluator built for the same task object")
    upper_seed, lower_seed = np.random.SeedSequence(seed).spawn(2)
    rng_upper, rng_lower = np.random.default_rng(upper_seed), np.random.default_rng(lower_seed)
    frameworks = ops.propose_frameworks(task, config.frameworks, rng_upper)
    if not frameworks:
        raise ValueError(f"operators: proposed no frameworks for task {task.name!r}")
    history: list[Evaluation] = []
    for t in range(config.rounds):
        if config.variant == "flat":
            drawn = [frameworks[int(rng_upper.integers(len(frameworks)))] for _ in range(config.l)]
            cands: list[Candidate] = []
            for f in dict.fromkeys(drawn):
                own = [e for e in history if e.candidate.framework == f]
                cands += ops.propose_candidates(task, f, own, drawn.count(f), rng_lower)
        else:
            if config.variant == "ran":
                f = frameworks[int(rng_upper.integers(len(frameworks)))]
            else:
                f = select_framework(frameworks, history, config.c, config.d, rng_upper)
            own = [e for e in history if e.candidate.framework == f]
            cands = ops.propose_candidates(task, f, own, config.l, rng_lower)
        if not cands:
            raise ValueError(f"operators: proposed no candidates in round {t}")
        predicted = None
        if config.variant == "naive":
            pick = int(rng_lower.integers(len(cands)))
        else:
            estimates = [
                np.asarray(ops.predict_objectives(task, cands, history, rng_lower), np.float64)
                for _ in range(config.q)
            ]
            predicted_all = np.mean(estimates, axis=0)
            ok = [e.y for e in history if not e.failed]
            front = np.stack(ok) if ok else np.zeros((0, predicted_all.shape[1]))
            front = front[non_dominated(front)] if len(front) else front
            pick = int(np.argmax(acquisition(front, np.clip(predicted_all, 0.0, 1.0))))
            predicted = predicted_all[pick]
        cand = cands[pick]
        repaired: list[Candidate] = []
        e = evaluator(cand, t)
        while e.failed and len(repaired) < config.retries:
            repaired.append(cand)
            cand = ops.repair_candidate(task, cand, e.error, history, rng_lower)
            e = evaluator(cand, t)
        history.append(
            Evaluation(
                e.round, e.candidate, e.y, e.failed, e.error, e.raw, predicted, tuple(repaired)
            )
        )
    return SearchResult(task.name, config.variant, history)
