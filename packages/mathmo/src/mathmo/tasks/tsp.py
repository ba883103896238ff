"""Travelling salesman: tour cost vs runtime on a random Euclidean instance.

Frameworks (each a real solver family): exact dynamic programming (Held-Karp, the ground truth,
``O(n^2 2^n)``, so ``n <= 12``), nearest-neighbour construction, 2-opt local search from random
or nearest-neighbour starts, simulated annealing over 2-opt moves, and OR-Tools' routing solver
(first-solution strategy x metaheuristic x time limit).

Objectives (normalised, higher is better): quality ``1 - gap / 0.5`` where ``gap = cost /
optimum - 1`` (Held-Karp optimum; 0 at 50 % above), and speed, ``log10`` CPU seconds mapped
from 10 us (1) to 10 s (0).
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from mathmo.tasks.base import Candidate, Framework, Task, gap_quality, log_speed


def tour_cost(dist: np.ndarray, tour: list[int] | np.ndarray) -> float:
    t = np.asarray(tour)
    return float(dist[t, np.roll(t, -1)].sum())


def held_karp(dist: np.ndarray) -> float:
    """Optimal tour cost by Held-Karp: ``C[S, j]`` = shortest path from city 0 through ``S``
    ending at ``j``; ``C[S + k, k] = min_j C[S, j] + d(j, k)``."""
    n = len(dist)
    if n < 4:  # at most 2 tours from city 0: enumerate them (asymmetric costs included)
        return min(tour_cost(dist, [0, *p]) for p in itertools.permutations(range(1, n)))
    m = n - 1
    inner = dist[1:, 1:]
    dp = np.full((1 << m, m), np.inf)
    for j in range(m):
        dp[1 << j, j] = dist[0, j + 1]
    for mask in range(1, 1 << m):
        row = dp[mask]
        if not np.isfinite(row).any():
            continue
        best = (row[:, None] + inner).min(axis=0)  # extend by each k
        for k in range(m):
            if not mask >> k & 1:
                nxt = mask | 1 << k
                if best[k] < dp[nxt, k]:
                    dp[nxt, k] = best[k]
    return float((dp[(1 << m) - 1] + dist[1:, 0]).min())


def nearest_neighbour(dist: np.ndarray, start: int = 0) -> list[int]:
    n = len(dist)
    tour, free = [start], np.ones(n, dtype=bool)
    free[start] = False
    for _ in range(n - 1):
        d = np.where(free, dist[tour[-1]], np.inf)
        nxt = int(np.argmin(d))
        tour.append(nxt)
        free[nxt] = False
    return tour


def two_opt(dist: np.ndarray, tour: list[int]) -> list[int]:
    """First-improvement 2-opt until no reversal shortens the tour."""
    t = np.array(tour)
    n = len(t)
    improved = True
    while improved:
        improved = False
        for i in range(n - 1):
            a, b = t[i], t[i + 1]
            c, d = t[i + 2 :], np.roll(t, -1)[i + 2 :]
            delta = dist[a, c] + dist[b, d] - dist[a, b] - dist[c, d]
            if i == 0:
                delta = delta[:-1]  # the edge (t[n-1], t[0]) shares city t[0]
            if len(delta) and delta.min() < -1e-12:
                j = i + 2 + int(np.argmin(delta))
                t[i + 1 : j + 1] = t[i + 1 : j + 1][::-1]
                improved = True
    return t.tolist()


def simulated_annealing(dist: np.ndarray, iterations: int, t0: float, seed: int) -> list[int]:
    """Metropolis over random segment reversals, geometric cooling from ``t0`` to ``t0/1000``."""
    rng = np.random.default_rng(seed)
    n = len(dist)
    t = rng.permutation(n)
    cost = tour_cost(dist, t)
    best, best_cost = t.copy(), cost
    alpha = 1e-3 ** (1.0 / max(iterations, 1))
    temp = t0
    pairs = rng.integers(0, n, size=(iterations, 2))
    u = rng.random(iterations)
    for it in range(iterations):
        i, j = sorted(pairs[it])
        if j - i < 1 or (i == 0 and j == n - 1):
            temp *= alpha
            continue
        a, b, c, d = t[i - 1], t[i], t[j], t[(j + 1) % n]
        delta = dist[a, c] + dist[b, d] - dist[a, b] - dist[c, d]
        if delta < 0 or u[it] < np.exp(-delta / temp):
            t[i : j + 1] = t[i : j + 1][::-1]
            cost += delta
            if cost < best_cost:
                best, best_cost = t.copy(), cost
        temp *= alpha
    return best.tolist()


def ortools_routing(
    dist: np.ndarray, first_solution: str, metaheuristic: str, time_ms: int
) -> list[int]:
    from ortools.constraint_solver import pywrapcp, routing_enums_pb2

    n = len(dist)
    scaled = np.rint(dist * 1e4).astype(np.int64)
    manager = pywrapcp.RoutingIndexManager(n, 1, 0)
    routing = pywrapcp.RoutingModel(manager)
    cb = routing.RegisterTransitCallback(
        lambda i, j: int(scaled[manager.IndexToNode(i), manager.IndexToNode(j)])
    )
    routing.SetArcCostEvaluatorOfAllVehicles(cb)
    params = pywrapcp.DefaultRoutingSearchParameters()
    params.first_solution_strategy = getattr(
        routing_enums_pb2.FirstSolutionStrategy, first_solution
    )
    if metaheuristic != "NONE":
        params.local_search_metaheuristic = getattr(
            routing_enums_pb2.LocalSearchMetaheuristic, metaheuristic
        )
        params.time_limit.FromMilliseconds(time_ms)
    solution = routing.SolveWithParameters(params)
    if solution is None:
        raise RuntimeError("OR-Tools routing found no solution")
    index, tour = routing.Start(0), []
    while not routing.IsEnd(index):
        tour.append(manager.IndexToNode(index))
        index = solution.Value(routing.NextVar(index))
    return tour


class TSPTask(Task):
    """A random Euclidean instance of ``n <= 12`` cities in the unit square (Held-Karp exact)."""

    objectives = ("quality", "speed")

    def __init__(self, n: int = 12, seed: int = 0, ortools: bool = True) -> None:
        if not isinstance(n, int) or not 4 <= n <= 12:
            raise ValueError(
                f"n: expected an int in [4, 12] (Held-Karp is the ground truth), got {n!r}"
            )
        self.name = f"tsp-{n}"
        rng = np.random.default_rng(seed)
        xy = rng.random((n, 2))
        self.dist = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))
        self.optimum = held_karp(self.dist)
        fws = [
            Framework("exact_dp", "Held-Karp dynamic programming (exact)", {}),
            Framework(
                "nearest_neighbour",
                "greedy construction from a start city",
                {"start": tuple(range(n))},
            ),
            Framework(
                "two_opt",
                "2-opt local search with restarts",
                {
                    "init": ("random", "nearest_neighbour"),
                    "restarts": (1, 2, 4, 8),
                    "seed": (0, 1, 2),
                },
            ),
            Framework(
                "annealing",
                "simulated annealing over 2-opt moves",
                {
                    "iterations": (300, 1000, 3000, 10000, 30000),
                    "t0": (0.05, 0.2, 1.0),
                    "seed": (0, 1),
                },
            ),
        ]
        if ortools:
            # imported here, not inside the timed solve: a sandboxed child inherits the module
            from ortools.constraint_solver import pywrapcp  # noqa: F401

            fws.append(
                Framework(
                    "ortools_routing",
                    "OR-Tools routing: first solution + metaheuristic",
                    {
                        "first_solution": ("PATH_CHEAPEST_ARC", "SAVINGS", "CHRISTOFIDES"),
                        "metaheuristic": ("NONE", "GUIDED_LOCAL_SEARCH"),
                        "time_ms": (20, 100, 500),
                    },
                )
            )
        self.frameworks = tuple(fws)

    def describe(self) -> str:
        return (
            f"Symmetric Euclidean TSP with {len(self.dist)} cities in the unit square; objectives: "
            "tour length (minimise) and solver CPU time (minimise)."
        )

    def solve(self, candidate: Candidate) -> float:
        f, d = candidate.framework, self.dist
        if f == "exact_dp":
            return held_karp(d)
        if f == "nearest_neighbour":
            return tour_cost(d, nearest_neighbour(d, candidate.get("start")))
        if f == "two_opt":
            rng = np.random.default_rng(candidate.get("seed"))
            best = np.inf
            for r in range(candidate.get("restarts")):
                if candidate.get("init") == "random":
                    start = rng.permutation(len(d)).tolist()
                else:
                    start = nearest_neighbour(d, r % len(d))
                best = min(best, tour_cost(d, two_opt(d, start)))
            return float(best)
        if f == "annealing":
            it, t0, seed = candidate.get("iterations"), candidate.get("t0"), candidate.get("seed")
            return tour_cost(d, simulated_annealing(d, it, t0, seed))
        if f == "ortools_routing":
            tour = ortools_routing(
                d,
                candidate.get("first_solution"),
                candidate.get("metaheuristic"),
                candidate.get("time_ms"),
            )
            return tour_cost(d, tour)
        raise ValueError(f"candidate: unknown TSP framework {f!r}")

    def evaluate(self, candidate: Candidate) -> dict[str, float]:
        start = time.process_time()
        cost = self.solve(candidate)
        return {"cost": cost, "cpu_s": time.process_time() - start}

    def normalise(self, raw: dict[str, float], subjective: float | None = None) -> np.ndarray:
        return np.array([gap_quality(raw["cost"], self.optimum, 0.5), log_speed(raw["cpu_s"])])
