"""Full-grid Chinchilla fit: our batched solver (`fit_law`) vs what a user would otherwise run.

The peer is the fair user baseline: one ``scipy.optimize.minimize(method="L-BFGS-B")`` per start
of the SAME initialisation grid (Epoch AI's 4,500 starts), at scipy's default tolerances, with
the exact gradient (our vectorised `objective_and_grad`), keeping the lowest objective. Both are
timed interleaved on one thread by `shared_core.bench`; the table also says how close the two
minima are (objective and parameters).

    python benchmarks/bench_fit.py            # 250 and 5,000 rows
    python benchmarks/bench_fit.py --quick    # 250 rows, 3 repeats
"""

from __future__ import annotations

import json
import math

import numpy as np
from quality_scaling.fit import DELTA, FitResult, fit_law, init_grid, objective_and_grad
from quality_scaling.laws import CHINCHILLA, QUALITY, ScalingData, ScalingLaw
from scipy.optimize import minimize

from shared_core.atomic import atomic_write_text
from shared_core.bench import BenchTable, bench_parser, finish, measure

TRUE = {"A": 406.4, "B": 410.7, "E": 1.69, "alpha": 0.34, "beta": 0.28, "gamma": 0.5}


def synthetic_rows(law: ScalingLaw, n: int, seed: int = 0) -> ScalingData:
    """`n` runs with N in [1e7, 1e10], D in [1e9, 1e12] (log-uniform), 1% lognormal loss noise."""
    rng = np.random.default_rng(seed)
    N = np.exp(rng.uniform(np.log(1e7), np.log(1e10), n))
    D = np.exp(rng.uniform(np.log(1e9), np.log(1e12), n))
    Q = rng.uniform(0.3, 1.0, n) if law.uses_quality else np.ones(n)
    clean = ScalingData(N, D, np.ones(n), Q)
    loss = law.predict(law.theta(TRUE), clean) * np.exp(0.01 * rng.standard_normal(n))
    return ScalingData(N, D, loss, Q)


def scipy_grid(data: ScalingData, law: ScalingLaw, grid: np.ndarray) -> FitResult:
    """The user baseline: L-BFGS-B from every start at scipy's defaults; keep the best."""
    best_theta, best_f = grid[0], math.inf
    for theta0 in grid:
        res = minimize(
            objective_and_grad, theta0, args=(law, data, DELTA, None), jac=True, method="L-BFGS-B"
        )
        if res.fun < best_f:
            best_theta, best_f = np.asarray(res.x), float(res.fun)
    return FitResult(law, best_theta, best_f, len(data))


def main() -> None:
    p = bench_parser(__doc__.splitlines()[0])
    p.add_argument(
        "--rows", type=int, nargs="+", default=None, help="row counts (default 250 5000)"
    )
    p.add_argument("--law", choices=["chinchilla", "quality"], default="chinchilla")
    a = p.parse_args()
    law = CHINCHILLA if a.law == "chinchilla" else QUALITY
    grid = init_grid(law)
    sizes = a.rows or ([250] if a.quick else [250, 5000])
    repeats = min(a.repeats, 3) if a.quick else a.repeats
    peer = "scipy L-BFGS-B grid"
    table = BenchTable(
        f"{law.name} fit, {len(grid)} starts (Epoch AI's grid), one thread", candidate="ours"
    )
    agreement = []
    minima: list[dict[str, float]] = []
    for n in sizes:
        data = synthetic_rows(law, n)
        out: dict[str, FitResult] = {}

        def ours(data: ScalingData = data, out: dict[str, FitResult] = out) -> None:
            out["ours"] = fit_law(data, law, grid=grid)

        def user(data: ScalingData = data, out: dict[str, FitResult] = out) -> None:
            out[peer] = scipy_grid(data, law, grid)

        results = measure(
            {"ours": ours, peer: user}, repeats=repeats, warmup=0, min_time=0.0, threads=a.threads
        )
        table.add(f"{n} rows", results)
        f_ours, f_peer = out["ours"].objective, out[peer].objective
        d_theta = float(np.max(np.abs(out["ours"].theta - out[peer].theta)))
        agreement.append(
            f"| {n} | {f_ours:.6e} | {f_peer:.6e} | {(f_peer - f_ours) / f_ours:+.1e} | {d_theta:.1e} |"
        )
        minima.append({"rows": n, "ours": f_ours, "peer": f_peer, "max_abs_theta_diff": d_theta})
    finish([table], a.json)
    if a.json is not None:  # the fitted minima beside the timings (README's second table)
        tables = json.loads(a.json.read_text())  # finish() writes the list of tables
        payload = {"tables": tables, "minima": minima}
        atomic_write_text(a.json, json.dumps(payload, indent=2) + "\n")
    print("**fitted minimum**: objective (summed Huber) and max |theta difference| (log space)\n")
    print("| rows | ours | scipy grid | (scipy - ours) / ours | max abs theta diff |")
    print("|---|---|---|---|---|")
    print("\n".join(agreement))


if __name__ == "__main__":
    main()
