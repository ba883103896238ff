"""Fit time and test NLL of the EMM against a regression tree with Gaussian leaves and an MDN.

    python benchmarks/bench_fit.py [--quick] [--repeats N] [--threads N] [--json out.json]

Planted-rule data (`explainable_mixtures.data.planted`, 1-D target) with n = 1k, 10k, 100k
training rows (--quick: 1k, 10k) and 5,000 test rows. Each candidate is a full fit:

- ours: `ExplainableMixture(8, steps=400)` (batches of 4,096 rows; pruning, merging, BIC);
- tree: scikit-learn's DecisionTreeRegressor with 4 leaves + a Gaussian per leaf (what a user
  of CDTree-like models would fit; no rules to learn, so it is the fast reference);
- mdn: a 2x64 tanh mixture density network, 5 components, 400 steps of 512 rows.

The ratio column is peer time / ours (> 1: ours faster). The second table is the test NLL
(nats per row) of each fit, with the planted model's own NLL ('truth').
"""

from __future__ import annotations

import json

import numpy as np
from explainable_mixtures import ExplainableMixture
from explainable_mixtures.baselines import MixtureDensityNetwork, TreeGaussian
from explainable_mixtures.data import planted
from explainable_mixtures.reference import partition_log_density

from shared_core.atomic import atomic_write_text
from shared_core.bench import BenchTable, bench_parser, finish, measure
from shared_core.report import markdown_table


def main() -> None:
    args = bench_parser(__doc__.splitlines()[0]).parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    repeats = min(args.repeats, 3)  # a fit is seconds long: three interleaved repeats
    table = BenchTable(f"full fit, planted rules, CPU, {args.threads} thread(s)", candidate="ours")
    nll_rows = []
    test = planted(5_000, seed=99)
    truth = -partition_log_density(
        test.X, test.y, [list(map(tuple, b)) for b in test.boxes], test.means, test.covs
    ).mean()
    for n in sizes:
        train = planted(n, seed=n)
        fits: dict[str, object] = {}

        def ours(train=train, fits=fits) -> None:
            fits["ours"] = ExplainableMixture(8, steps=400, seed=0).fit(train.X, train.y)

        def tree(train=train, fits=fits) -> None:
            fits["tree"] = TreeGaussian(4).fit(train.X, train.y)

        def mdn(train=train, fits=fits) -> None:
            fits["mdn"] = MixtureDensityNetwork(5, steps=400, seed=0).fit(train.X, train.y)

        results = measure(
            {"ours": ours, "tree": tree, "mdn": mdn},
            repeats=repeats,
            warmup=0,
            min_time=0.0,
            threads=args.threads,
        )
        table.add(f"n = {n:,}", results)
        nll_rows.append(
            {
                "n": f"{n:,}",
                **{
                    name: round(-float(np.mean(m.log_density(test.X, test.y))), 3)  # type: ignore[attr-defined]
                    for name, m in fits.items()
                },
                "truth": round(float(truth), 3),
            }
        )
    finish([table], args.json)
    if args.json is not None:  # the fits' test NLL beside the timings (README's second table)
        tables = json.loads(args.json.read_text())  # finish() writes the list of tables
        payload = {"tables": tables, "test_nll": nll_rows}
        atomic_write_text(args.json, json.dumps(payload, indent=2) + "\n")
    print("test NLL (nats per row, 5,000 rows)")
    print(markdown_table(nll_rows))


if __name__ == "__main__":
    main()
