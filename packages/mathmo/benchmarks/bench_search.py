"""Hypervolume time vs front size (ours vs pymoo), and MATHMO's per-round overhead vs evaluation.

    python benchmarks/bench_search.py [--quick] [--repeats N] [--threads N] [--json out.json]

Table 1: exact hypervolume of a mutually non-dominated front (points on the positive unit
sphere, normalised space, reference 0) with `mathmo.hypervolume` (moocore, with the input
checks and the maximisation convention) and pymoo's ``pymoo.indicators.hv.HV`` (what a user
would otherwise call; pymoo minimises, so it gets -y).
Table 2: one round of the search's decisions (Pareto-UCB + candidate generation + k-NN
surrogate + hypervolume-gain acquisition, mean over a 20-round run on the planted task, whose
evaluation costs microseconds) against executing one candidate: a 2-opt TSP solve (12 cities)
inline, and the same candidate through the sandbox (fork + temporary directory). Ratio = peer
time / ours.
"""

from __future__ import annotations

import numpy as np
from mathmo import PlantedTask, SearchConfig, hypervolume, run_search
from mathmo.sandbox import run_sandboxed
from mathmo.tasks.base import Candidate
from mathmo.tasks.tsp import TSPTask
from pymoo.indicators.hv import HV

from shared_core.bench import BenchTable, bench_parser, finish, measure


def sphere_front(n: int, k: int, seed: int = 0) -> np.ndarray:
    y = np.abs(np.random.default_rng(seed).standard_normal((n, k)))
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def main() -> None:
    args = bench_parser((__doc__ or "").splitlines()[0]).parse_args()
    sizes = (
        [(10, 2), (100, 2), (50, 3), (200, 3), (50, 4)]
        if args.quick
        else [(10, 2), (100, 2), (1000, 2), (10, 3), (50, 3), (200, 3), (10, 4), (50, 4)]
    )
    repeats = min(args.repeats, 3) if args.quick else args.repeats
    hv_table = BenchTable(
        f"exact hypervolume, front on the unit sphere, CPU, {args.threads} thread(s)",
        candidate="ours",
    )
    for n, k in sizes:
        y = sphere_front(n, k)
        ind = HV(ref_point=np.zeros(k))
        assert abs(hypervolume(y) - ind(-y)) < 1e-9
        res = measure(
            {"ours": lambda y=y: hypervolume(y), "pymoo": lambda y=y, ind=ind: ind(-y)},
            repeats=repeats,
            threads=args.threads,
        )
        hv_table.add(f"n={n}, k={k}", res)

    planted = PlantedTask()
    tsp = TSPTask(12, ortools=False)
    cand = Candidate.of("two_opt", init="random", restarts=1, seed=0)
    rounds = 20
    cfg = SearchConfig(rounds=rounds, sandbox=False)
    round_table = BenchTable(
        f"search overhead per round (mean of {rounds}) vs executing one candidate, CPU, {args.threads} thread(s)",
        candidate="ours",
    )
    res = measure(
        {
            "ours": lambda: run_search(planted, cfg, seed=0),
            "2-opt inline": lambda: [tsp.evaluate(cand) for _ in range(rounds)],
            "2-opt sandboxed": lambda: [
                run_sandboxed(tsp.evaluate, (cand,), 60.0) for _ in range(rounds)
            ],
        },
        repeats=repeats,
        threads=args.threads,
    )
    round_table.add("20 rounds vs 20 executions", res)
    round_table.title += " (sandbox CPU is the child's: wall clock is the fair column there)"
    finish([hv_table, round_table], args.json)


if __name__ == "__main__":
    main()
