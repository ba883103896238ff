"""Does BIC select differently when it counts the components' parameters too?

The paper's EMM (the defaults) with ``bic_count="rules"`` (the paper's ``|Theta|``) and
``"all"`` (ours: plus each rule's Gaussian), on the splits ``reproduce --scale tiny`` uses
(30 % held out; 3 seeds; 3,500 QM9 training molecules, 309 diabetes patients): rules kept, conditions per rule, test NLL (nats per row).

    OMP_NUM_THREADS=1 uv run python packages/explainable-mixtures/benchmarks/bic_count.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from explainable_mixtures import ExplainableMixture, data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    tables = {"qm9-gap": data.qm9_gap(5000, seed=0), "diabetes": data.diabetes()}
    print("| data | bic_count | rules | conditions per rule | test NLL | CPU s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for key in tables:
        for count in ("rules", "all"):
            rules, conds, nll, cpu = [], [], [], []
            for seed in range(args.seeds):
                train, test = data.split(tables[key], 0.3, seed)
                t0 = time.process_time()
                est = ExplainableMixture(8, seed=seed, bic_count=count)
                est.fit(train.X, train.y, train.feature_names)
                cpu.append(time.process_time() - t0)
                rules.append(est.model_.k)
                conds.append(np.mean([len(r.conditions) for r in est.rules_]))
                nll.append(-est.score(test.X, test.y))
            print(
                f"| {key} | {count} | {np.mean(rules):.2f} | {np.mean(conds):.2f} | "
                f"{np.mean(nll):.3f} ± {np.std(nll):.3f} | {np.sum(cpu):.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
