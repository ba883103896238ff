"""Bad input to the public API, in one table: each case raises a ValueError/TypeError naming
the argument (issue 46's probes: `pareto_ucb([])` raised an AttributeError on list,
`PlantedTask(frameworks=("zzz",))` a KeyError, a task returning costs where MATHMO maximises
gave a silent hypervolume of 55.0, `front()` listed a candidate twice and results holding numpy
scalars were dropped)."""

from __future__ import annotations

import numpy as np
import pytest
from mathmo import (
    Candidate,
    Evaluation,
    Evaluator,
    Framework,
    ModelCard,
    PlantedTask,
    SearchConfig,
    SearchResult,
    hypervolume,
    hypervolume_gain,
    mose_score,
    non_dominated,
    pareto_ucb,
    parsimony_judge,
    run_sandboxed,
    run_search,
    select_framework,
)

from shared_core.testing import assert_bad_input


class _CostTask(PlantedTask):
    """Returns raw costs (lower is better, unbounded) where MATHMO expects maximised [0, 1]."""

    def normalise(self, raw: dict[str, float], subjective: float | None = None) -> np.ndarray:
        return np.array([10.0 * raw["first"] + 5.0, raw["second"]])


_PTS = np.array([[0.2, 0.8], [0.6, 0.4]])
_NAN_PTS = np.array([[0.2, np.nan], [0.6, 0.4]])
_CARD = ModelCard("a model", 3, True)
_RNG = np.random.default_rng(0)
_CAND = Candidate.of("fair", x=5)

CASES = {
    # Pareto utilities
    "hypervolume of NaN": (lambda: hypervolume(_NAN_PTS), ValueError, "points"),
    "hypervolume of inf": (lambda: hypervolume(_PTS * np.inf), ValueError, "points"),
    "hypervolume of a 1-D array": (lambda: hypervolume(np.array([0.2, 0.3])), ValueError, "points"),
    "hypervolume of no columns": (lambda: hypervolume(np.zeros((2, 0))), ValueError, "points"),
    "hypervolume of strings": (lambda: hypervolume([["a", "b"]]), ValueError, "points"),
    "hypervolume with a short ref": (lambda: hypervolume(_PTS, np.zeros(3)), ValueError, "ref"),
    "hypervolume with a NaN ref": (
        lambda: hypervolume(_PTS, np.array([0.0, np.nan])),
        ValueError,
        "ref",
    ),
    "non_dominated of NaN": (lambda: non_dominated(_NAN_PTS), ValueError, "points"),
    "gain of a NaN candidate": (
        lambda: hypervolume_gain(_PTS, np.array([np.nan, 0.5])),
        ValueError,
        "candidate",
    ),
    "gain of a candidate of another size": (
        lambda: hypervolume_gain(_PTS, np.array([0.5, 0.5, 0.5])),
        ValueError,
        "candidate",
    ),
    "gain of a 3-D front": (
        lambda: hypervolume_gain(np.zeros((1, 1, 2)), np.array([0.5, 0.5])),
        ValueError,
        "front",
    ),
    # Pareto-UCB and the framework choice
    "pareto_ucb of a list": (lambda: pareto_ucb([], 0.5, 0.3), TypeError, "values"),
    "pareto_ucb of NaN vectors": (
        lambda: pareto_ucb({"a": [np.array([np.nan, 0.2])]}, 0.5, 0.3),
        ValueError,
        "values",
    ),
    "pareto_ucb of ragged vectors": (
        lambda: pareto_ucb({"a": [np.zeros(2)], "b": [np.zeros(3)]}, 0.5, 0.3),
        ValueError,
        "values",
    ),
    "pareto_ucb with a negative c": (
        lambda: pareto_ucb({"a": [np.zeros(2)]}, -1.0, 0.3),
        ValueError,
        "c",
    ),
    "pareto_ucb with a NaN d": (
        lambda: pareto_ucb({"a": [np.zeros(2)]}, 0.5, float("nan")),
        ValueError,
        "d",
    ),
    "select from no frameworks": (
        lambda: select_framework([], [], 0.5, 0.3, _RNG),
        ValueError,
        "frameworks",
    ),
    # tasks, frameworks, config
    "unknown planted framework": (
        lambda: PlantedTask(frameworks=("zzz",)),
        ValueError,
        "frameworks",
        "zzz",
    ),
    "unknown framework name": (lambda: PlantedTask().framework("zzz"), ValueError, "framework"),
    "empty grid values": (lambda: Framework("f", "d", {"x": ()}), ValueError, "grid['x']"),
    "unsorted numeric grid": (lambda: Framework("f", "d", {"x": (2, 1)}), ValueError, "grid['x']"),
    "zero rounds": (lambda: SearchConfig(rounds=0), ValueError, "rounds", "0"),
    "float rounds": (lambda: SearchConfig(rounds=2.5), TypeError, "rounds"),
    "negative retries": (lambda: SearchConfig(retries=-1), ValueError, "retries"),
    "NaN c": (lambda: SearchConfig(c=float("nan")), ValueError, "c"),
    "unknown variant": (lambda: SearchConfig(variant="zzz"), ValueError, "variant", "zzz"),
    "zero time limit": (lambda: SearchConfig(time_limit=0.0), ValueError, "time_limit"),
    "search on a string task": (lambda: run_search("planted"), TypeError, "task"),
    "search with another task's evaluator": (
        lambda: run_search(PlantedTask(), evaluator=Evaluator(PlantedTask(), parsimony_judge)),
        ValueError,
        "evaluator",
    ),
    # costs where MATHMO maximises (was a silent HV of 55.0)
    "a task that returns costs": (
        lambda: Evaluator(_CostTask(), parsimony_judge, sandbox=False)(_CAND, 0),
        ValueError,
        "normalise",
    ),
    # MOSE and the sandbox
    "mose with no references": (
        lambda: mose_score(_CARD, [], parsimony_judge),
        ValueError,
        "references",
    ),
    "mose judge out of [0, 1]": (
        lambda: mose_score(_CARD, [_CARD], lambda a, b: 1.5),
        ValueError,
        "judge",
    ),
    "mose judge NaN": (
        lambda: mose_score(_CARD, [_CARD], lambda a, b: float("nan")),
        ValueError,
        "judge",
    ),
    "sandbox negative limit": (lambda: run_sandboxed(print, (), -1.0), ValueError, "time_limit"),
    "sandbox string limit": (lambda: run_sandboxed(print, (), "5"), TypeError, "time_limit"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])


def test_front_lists_each_candidate_once() -> None:
    """Issue 46: `front()` listed the same candidate twice (evaluated in two rounds)."""
    y = np.array([0.5, 0.5])
    evals = [Evaluation(r, _CAND, y, False, "") for r in range(3)]
    front = SearchResult("planted", "mathmo", evals).front()
    assert [e.round for e in front] == [0]


def test_numpy_scalar_results_are_kept() -> None:
    """Issue 46: results holding numpy scalars (np.float32) were dropped as malformed."""

    class _Float32Task(PlantedTask):
        def evaluate(self, candidate: Candidate) -> dict[str, float]:
            return {k: np.float32(v) for k, v in super().evaluate(candidate).items()}

    e = Evaluator(_Float32Task(), parsimony_judge, sandbox=False)(_CAND, 0)
    assert not e.failed and e.y.shape == (2,)
