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
from mathmo.tasks.base import Candidate, Framework, ModelCard


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


class _NumpyPlanted(PlantedTask):
    """The planted task whose results are numpy scalars (as many real tasks return)."""

    def evaluate(self, candidate: Candidate) -> dict[str, float]:
        return {k: np.float32(v) for k, v in super().evaluate(candidate).items()}  # type: ignore[misc]


def test_numpy_scalar_results_are_kept() -> None:
    result = run_search(_NumpyPlanted(("good",)), SearchConfig(rounds=5, sandbox=False), seed=0)
    assert not any(e.failed for e in result.evaluations)
    assert all(isinstance(v, float) for e in result.evaluations for _, v in e.raw)


class _FlakyPlanted(PlantedTask):
    """Fails for odd x: a failed candidate can be repaired by moving x."""

    def evaluate(self, candidate: Candidate) -> dict[str, float]:
        if candidate.get("x") % 2:
            raise RuntimeError(f"odd x = {candidate.get('x')}")
        return super().evaluate(candidate)


def test_failed_candidates_are_repaired_up_to_the_retry_count() -> None:
    task = _FlakyPlanted(("good",))
    with_retries = run_search(task, SearchConfig(rounds=12, sandbox=False, retries=4), seed=3)
    without = run_search(task, SearchConfig(rounds=12, sandbox=False, retries=0), seed=3)
    assert all(len(e.repaired) <= 4 for e in with_retries.evaluations)
    repaired = [e for e in with_retries.evaluations if e.repaired]
    assert repaired, "no round needed a repair: the test plants odd x values"
    assert all(c.get("x") % 2 for e in repaired for c in e.repaired)  # only failures retried
    n_fail = [sum(e.failed for e in r.evaluations) for r in (with_retries, without)]
    assert n_fail[0] < n_fail[1]
    assert all(not e.repaired for e in without.evaluations)
    # an always-failing framework exhausts the retries and scores 0
    hard = run_search(
        PlantedTask(("good",), failing=True),
        SearchConfig(rounds=6, frameworks=5, sandbox=True, time_limit=1.0, retries=1),
        seed=0,
    )
    crashed = [e for e in hard.evaluations if e.candidate.framework == "crash"]
    assert crashed and all(e.failed and len(e.repaired) == 1 and not e.y.any() for e in crashed)


class _CountingOperators(ProgrammaticOperators):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.predictions = 0

    def predict_objectives(self, task, candidates, history, rng):  # type: ignore[no-untyped-def]
        self.predictions += 1
        return super().predict_objectives(task, candidates, history, rng)


def test_q_surrogate_estimates_per_round_and_their_mean() -> None:
    task = PlantedTask(("good", "weak"))
    ops = _CountingOperators()
    run_search(task, SearchConfig(rounds=7, q=3, sandbox=False), ops, seed=0)
    assert ops.predictions == 3 * 7
    # without bootstrap the q estimates agree, so q changes no decision
    det = [
        run_search(
            task,
            SearchConfig(rounds=10, q=q, sandbox=False),
            ProgrammaticOperators(bootstrap=False),
            seed=1,
        )
        for q in (1, 3)
    ]
    assert [e.candidate for e in det[0].evaluations] == [e.candidate for e in det[1].evaluations]
    # the bootstrap estimates differ, and the search records their mean
    history = run_search(task, SearchConfig(rounds=8, sandbox=False), seed=2).evaluations
    cands = [e.candidate for e in history[-3:]]
    rng = np.random.default_rng(0)
    draws = [
        ProgrammaticOperators().predict_objectives(task, cands, history, rng) for _ in range(6)
    ]
    assert not all(np.array_equal(draws[0], d) for d in draws[1:])


def test_mutation_leaves_the_grid_but_stays_in_range() -> None:
    task = PlantedTask(("good",))
    rng = np.random.default_rng(0)
    parent = Candidate.of("good", x=4)
    open_ops, grid_ops = ProgrammaticOperators(), ProgrammaticOperators(space="grid")
    moved = [open_ops.mutate(task, parent, rng) for _ in range(200)]
    xs = [c.get("x") for c in moved if c is not None]
    assert all(isinstance(x, int) and 0 <= x <= 9 for x in xs)  # an integer key stays integer
    fw = Framework("f", "float key", {"t": (0.1, 1.0, 10.0), "kind": ("a", "b")})
    values = {
        open_ops.mutate(_OneFramework(fw), Candidate.of("f", t=1.0, kind="a"), rng)
        for _ in range(200)
    }
    ts = {c.get("t") for c in values if c is not None}
    assert any(t not in fw.grid["t"] for t in ts) and all(0.1 <= t <= 10.0 for t in ts)
    ts_grid = {
        c.get("t")
        for c in (
            grid_ops.mutate(_OneFramework(fw), Candidate.of("f", t=1.0, kind="a"), rng)
            for _ in range(200)
        )
        if c is not None
    }
    assert ts_grid <= set(fw.grid["t"])


class _OneFramework(PlantedTask):
    def __init__(self, fw: Framework) -> None:
        self.name = "one"
        self.frameworks = (fw,)


def test_front_lists_each_candidate_once() -> None:
    result = run_search(
        PlantedTask(("good",)),
        SearchConfig(rounds=30, sandbox=False),
        ProgrammaticOperators(space="grid"),
        seed=0,
    )
    cands = [e.candidate for e in result.front()]
    assert len(cands) == len(set(cands))
    assert len({e.candidate for e in result.evaluations}) < 30  # the grid (10) forced repeats


class _CostTask(PlantedTask):
    """Returns raw costs from `normalise`: the mistake the search must refuse."""

    def normalise(self, raw: dict[str, float], subjective: float | None = None) -> np.ndarray:
        return np.array([5.0, 11.0])


def test_objectives_outside_the_unit_box_raise() -> None:
    with pytest.raises(ValueError, match=r"normalise: expected objectives in \[0, 1\]"):
        run_search(_CostTask(("good",)), SearchConfig(rounds=2, sandbox=False), seed=0)


def test_bad_public_inputs_name_the_argument() -> None:
    with pytest.raises(TypeError, match="values: expected a dict"):
        pareto_ucb([], 0.5, 0.3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="frameworks: expected names from"):
        PlantedTask(frameworks=("zzz",))
    with pytest.raises(ValueError, match="increasing order"):
        Framework("f", "unsorted", {"p": (3, 1, 2)})
    with pytest.raises(ValueError, match="retries"):
        SearchConfig(retries=-1)
    with pytest.raises(ValueError, match="q"):
        SearchConfig(q=0)
    with pytest.raises(ValueError, match="space"):
        ProgrammaticOperators(space="continuous")
