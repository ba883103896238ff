import itertools

import numpy as np
import pytest
from mathmo.mose import parsimony_judge
from mathmo.operators import grid_candidates
from mathmo.search import Evaluator
from mathmo.tasks.base import Candidate
from mathmo.tasks.ecology import EcologyTask
from mathmo.tasks.epidemiology import EpidemiologyTask
from mathmo.tasks.jobshop import JobShopTask, giffler_thompson, semi_active_makespan
from mathmo.tasks.tsp import TSPTask, held_karp, nearest_neighbour, tour_cost, two_opt


def test_held_karp_equals_brute_force() -> None:
    for seed in range(3):
        task = TSPTask(7, seed=seed, ortools=False)
        brute = min(tour_cost(task.dist, [0, *p]) for p in itertools.permutations(range(1, 7)))
        assert held_karp(task.dist) == pytest.approx(brute, rel=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_held_karp_is_exact_below_four_cities_on_asymmetric_costs(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(5):
        dist = rng.random((n, n)) * 10
        np.fill_diagonal(dist, 0.0)
        brute = min(tour_cost(dist, [0, *p]) for p in itertools.permutations(range(1, n)))
        assert held_karp(dist) == pytest.approx(brute, rel=1e-12)
    # the case: the identity tour costs 15, its reverse 3
    dist = np.array([[0.0, 5.0, 1.0], [1.0, 0.0, 5.0], [5.0, 1.0, 0.0]])
    assert held_karp(dist) == pytest.approx(3.0)


def test_tsp_heuristics_are_valid_tours_no_better_than_optimum() -> None:
    task = TSPTask(10, seed=1)
    for f in task.frameworks:
        for c in grid_candidates(task, f.name)[:3]:
            cost = task.evaluate(c)["cost"]
            assert cost >= task.optimum - 1e-9, (c, cost)
    tour = two_opt(task.dist, nearest_neighbour(task.dist, 0))
    assert sorted(tour) == list(range(10))
    assert (
        tour_cost(task.dist, tour) <= tour_cost(task.dist, nearest_neighbour(task.dist, 0)) + 1e-12
    )


def test_jobshop_solvers_respect_the_lower_bound_and_cp_sat_is_best() -> None:
    task = JobShopTask(5, 4, seed=2)
    opt = task.evaluate(Candidate.of("cp_sat", time_limit_s=1.0, seed=0))["makespan"]
    assert opt >= task.lower_bound
    for rule in ("SPT", "MWKR", "FIFO"):
        assert giffler_thompson(task.machines, task.durations, rule) >= opt
    ga = task.evaluate(Candidate.of("random_key_ga", population=10, generations=5, seed=0))[
        "makespan"
    ]
    assert ga >= opt
    seq = np.repeat(np.arange(5), 4)
    assert semi_active_makespan(task.machines, task.durations, seq) >= opt


def test_epidemiology_mechanistic_beats_trend_and_scores_are_normalised() -> None:
    task = EpidemiologyTask()
    ev = Evaluator(task, parsimony_judge, sandbox=False)
    seir = ev(Candidate.of("seir_change", beta0=0.6, loss="soft_l1", window=0.5), 0)
    trend = ev(Candidate.of("polynomial", degree=5, ridge=0.0), 0)
    assert not seir.failed and not trend.failed
    assert seir.y[0] > trend.y[0]  # accuracy
    assert seir.y[1] > trend.y[1]  # interpretability (fewer parameters, mechanistic)
    assert np.all((seir.y >= 0) & (seir.y <= 1))


def test_ecology_true_family_forecasts_well_and_lotka_volterra_trades_off() -> None:
    task = EcologyTask(symbolic=False)
    raw = task.evaluate(Candidate.of("rosenzweig_macarthur", init_scale=2.0, loss="soft_l1"))
    assert raw["rmse"] < 0.3 * task.scale  # the data's own model family
    lv = task.evaluate(Candidate.of("lotka_volterra", init_scale=1.0, loss="soft_l1"))
    assert lv["rmse"] > raw["rmse"] and lv["n_params"] < raw["n_params"]  # misspecified, simpler
    ar = task.evaluate(Candidate.of("autoregressive", p=8, ridge=0.0))
    assert ar["n_params"] > raw["n_params"]


def test_ecology_symbolic_regression_runs() -> None:
    pytest.importorskip("gplearn")
    task = EcologyTask()
    raw = task.evaluate(Candidate.of("symbolic", generations=5, parsimony=0.05))
    assert np.isfinite(raw["rmse"]) and raw["n_params"] >= 2


def test_tasks_reject_bad_sizes_and_frameworks() -> None:
    with pytest.raises(ValueError, match="n: expected an int in"):
        TSPTask(20)
    with pytest.raises(ValueError, match="jobs, machines"):
        JobShopTask(1, 3)
    with pytest.raises(ValueError, match="framework"):
        TSPTask(5, ortools=False).framework("genetic")
