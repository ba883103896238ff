"""Fit time with the full initialisation grid: batched solver (`fit_law`) vs the naive loop of
one scipy L-BFGS-B call per start (`reference.fit_law_reference`, Epoch AI's procedure).

    python benchmarks/bench_fit.py            # 250 and 5,000 rows, Chinchilla grid (4,500 starts)
    python benchmarks/bench_fit.py --quick    # the naive loop is timed on 60 random starts

The naive loop's full-grid time is its per-start time (on a random sample of `--naive-starts`
starts) times the grid size, unless `--naive-starts 0` runs every start.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from quality_scaling.fit import fit_law, init_grid
from quality_scaling.laws import CHINCHILLA, QUALITY, ScalingData
from quality_scaling.reference import fit_law_reference

TRUE = {"A": 406.4, "B": 410.7, "E": 1.69, "alpha": 0.34, "beta": 0.28, "gamma": 0.5}


def rows(law, n: int, seed: int = 0) -> ScalingData:
    rng = np.random.default_rng(seed)
    N = np.exp(rng.uniform(np.log(1e7), np.log(1e10), n))
    D = np.exp(rng.uniform(np.log(1e9), np.log(1e12), n))
    Q = rng.uniform(0.3, 1.0, n) if law.uses_quality else np.ones(n)
    clean = ScalingData(N, D, np.ones(n), Q)
    loss = law.predict(law.theta(TRUE), clean) * np.exp(0.01 * rng.standard_normal(n))
    return ScalingData(N, D, loss, Q)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--quick", action="store_true", help="fewer naive starts (runs in about a minute)"
    )
    ap.add_argument("--rows", type=int, nargs="+", default=[250, 5000])
    ap.add_argument("--naive-starts", type=int, default=None, help="0 = every start")
    ap.add_argument("--law", choices=["chinchilla", "quality"], default="chinchilla")
    a = ap.parse_args()
    law = CHINCHILLA if a.law == "chinchilla" else QUALITY
    grid = init_grid(law)
    k = a.naive_starts if a.naive_starts is not None else (60 if a.quick else 300)
    print(f"law {law.name}, grid of {len(grid)} starts")
    print("| rows | batched fit (s) | naive loop (s) | speed-up | same minimum |")
    print("| --- | --- | --- | --- | --- |")
    for n in a.rows:
        data = rows(law, n)
        t = time.perf_counter()
        fast = fit_law(data, law)
        t_fast = time.perf_counter() - t
        sub = grid if k == 0 else grid[np.random.default_rng(1).choice(len(grid), k, replace=False)]
        t = time.perf_counter()
        slow = fit_law_reference(data, law, grid=sub)
        t_slow = (time.perf_counter() - t) * len(grid) / len(sub)
        note = "" if k == 0 else f" (extrapolated from {k})"
        same = fast.objective <= slow.objective * (1 + 1e-6)
        print(f"| {n} | {t_fast:.1f} | {t_slow:.1f}{note} | {t_slow / t_fast:.1f}x | {same} |")


if __name__ == "__main__":
    main()
