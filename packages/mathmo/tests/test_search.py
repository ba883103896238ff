import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from mathmo import (
    Evaluation,
    PlantedTask,
    ProgrammaticOperators,
    SearchConfig,
    mose_score,
    pareto_ucb,
    run_search,
    select_framework,
)
from mathmo.tasks.base import Candidate, ModelCard


def _eval(framework: str, y: list[float]) -> Evaluation:
    return Evaluation(0, Candidate.of(framework, x=0), np.array(y))


def test_unvisited_frameworks_are_chosen_first() -> None:
    task = PlantedTask()
    for seed in range(5):
        result = run_search(task, SearchConfig(rounds=8, sandbox=False), seed=seed)
        first = [e.candidate.framework for e in result.evaluations[:5]]
        assert sorted(first) == sorted(f.name for f in task.frameworks)


def test_select_framework_prefers_unvisited_even_when_others_are_perfect() -> None:
    rng = np.random.default_rng(0)
    history = [_eval("a", [1.0, 1.0])] * 5
    assert all(select_framework(["a", "b"], history, 0.5, 0.3, rng) == "b" for _ in range(10))


def test_ucb_bonus_shrinks_with_visits() -> None:
    # equal means and zero variance: the UCB excess over the mean is d sqrt(ln N / N_f)
    ys = {"a": [np.array([0.5, 0.5])] * 2, "b": [np.array([0.5, 0.5])] * 8}
    ucb = pareto_ucb(ys, c=0.5, d=0.3)
    assert np.all(ucb["a"] > ucb["b"])
    assert ucb["b"][0] - 0.5 == pytest.approx(0.3 * math.sqrt(math.log(10) / 8))
    bonuses = [
        pareto_ucb({"a": [np.array([0.5])] * n, "z": [np.array([0.5])] * 5}, 0.5, 0.3)["a"][0]
        for n in (1, 2, 4, 8, 16)
    ]
    assert all(x > y for x, y in itertools.pairwise(bonuses))


def test_one_framework_bilevel_equals_flat() -> None:
    task = PlantedTask(("good",))
    for seed in range(3):
        a = run_search(task, SearchConfig(rounds=10, variant="mathmo", sandbox=False), seed=seed)
        b = run_search(task, SearchConfig(rounds=10, variant="flat", sandbox=False), seed=seed)
        assert [e.candidate for e in a.evaluations] == [e.candidate for e in b.evaluations]


def test_dominant_framework_gets_the_majority() -> None:
    task = PlantedTask(("good", "weak", "bad"))
    for seed in range(5):
        counts = run_search(
            task, SearchConfig(rounds=20, sandbox=False), seed=seed
        ).framework_counts()
        assert counts["good"] > 10, counts


def test_ablations_run_and_front_is_non_dominated() -> None:
    task = PlantedTask()
    for variant in ("mathmo", "ran", "flat", "naive"):
        result = run_search(task, SearchConfig(rounds=12, variant=variant, sandbox=False), seed=1)
        assert len(result.evaluations) == 12
        assert 0.0 < result.hypervolume() <= 1.0
        trace = result.trace()
        assert all(x <= y + 1e-15 for x, y in itertools.pairwise(trace))


def test_failures_are_recorded_and_the_search_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    task = PlantedTask(("good",), failing=True)
    result = run_search(task, SearchConfig(rounds=8, frameworks=5, time_limit=1.0), seed=0)
    by_fw = {e.candidate.framework: e for e in result.evaluations}
    assert {"hang", "crash", "nan", "writer", "good"} <= set(by_fw)
    assert by_fw["hang"].failed and "timed out" in by_fw["hang"].error
    assert by_fw["crash"].failed and "crashed" in by_fw["crash"].error
    assert by_fw["nan"].failed and "non-finite" in by_fw["nan"].error
    assert not by_fw["writer"].failed and not by_fw["good"].failed
    assert len(result.evaluations) == 8
    assert list(tmp_path.iterdir()) == []  # what the writer wrote stayed in its sandbox
    assert all(not e.failed for e in result.front())


def test_mose_score_bounds() -> None:
    refs = [ModelCard("r", n, False) for n in (2, 5, 9)]
    cand = ModelCard("c", 3, True)
    assert mose_score(cand, refs, lambda a, b: 1.0) == 1.0
    s = mose_score(cand, refs, ProgrammaticOperators().judge_pair)
    assert 0.0 <= s <= 1.0
    tiny = ModelCard("t", 0, True)
    huge = ModelCard("h", 200, False)
    assert mose_score(tiny, refs, ProgrammaticOperators().judge_pair) > 0.9
    assert mose_score(huge, refs, ProgrammaticOperators().judge_pair) < 0.01
    with pytest.raises(ValueError, match="probability"):
        mose_score(cand, refs, lambda a, b: 1.5)
    with pytest.raises(ValueError, match="at least one reference"):
        mose_score(cand, [], lambda a, b: 0.5)


@pytest.mark.parametrize(
    ("kwargs", "error", "kind"),
    [
        ({"rounds": 0}, "rounds", ValueError),
        ({"rounds": 2.5}, "rounds", TypeError),
        ({"l": 0}, "l", ValueError),
        ({"c": -1.0}, "c", ValueError),
        ({"d": float("nan")}, "d", ValueError),
        ({"variant": "greedy"}, "variant", ValueError),
        ({"time_limit": 0.0}, "time_limit", ValueError),
        ({"frameworks": True}, "frameworks", TypeError),
    ],
)
def test_config_rejects_bad_values(kwargs: dict, error: str, kind: type) -> None:
    with pytest.raises(kind, match=error):
        SearchConfig(**kwargs)


def test_run_search_rejects_non_task() -> None:
    with pytest.raises(TypeError, match="task"):
        run_search("tsp")  # type: ignore[arg-type]


def test_operators_reject_bad_settings() -> None:
    with pytest.raises(ValueError, match="neighbour_fraction"):
        ProgrammaticOperators(neighbour_fraction=2.0)
    with pytest.raises(ValueError, match="k"):
        ProgrammaticOperators(k=0)
