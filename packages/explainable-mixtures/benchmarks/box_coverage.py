"""Do the printed rule boxes describe the rows assigned to them?

On the planted world of the drift check (2,000 rows, 30 % held out, 8 initial rules, 600 steps),
the paper's default EMM at the default final temperature (tau_end 0.02) and at tau_end 0.005:
the share of held-out rows inside the printed box of the rule they are assigned to (fidelity),
split into rows in no printed box (gaps between boxes) and rows in another rule's box only
(overlap or a misassignment); rules, box Jaccard with the planted boxes and test NLL.

    OMP_NUM_THREADS=1 uv run python packages/explainable-mixtures/benchmarks/box_coverage.py
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from explainable_mixtures import ExplainableMixture
from explainable_mixtures.data import planted, split
from explainable_mixtures.recovery import matched_jaccard

from shared_core.atomic import atomic_write_text

TAU_ENDS = (0.02, 0.005)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = parser.parse_args()
    rows: list[dict[str, float]] = []
    print(
        "| tau_end | seed | rules | in own box | in no box | in another box only | box Jaccard mean | test NLL | CPU s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for tau_end in TAU_ENDS:
        for seed in range(args.seeds):
            train, test = split(planted(2000, seed=seed), 0.3, seed)
            t0 = time.process_time()
            est = ExplainableMixture(8, steps=600, seed=seed, tau_end=tau_end)
            est.fit(train.X, train.y, train.feature_names)
            cpu = time.process_time() - t0
            boxes = np.stack([r.box(train.feature_names, train.bounds) for r in est.rules_])
            inside = np.all(
                (test.X[:, None] >= boxes[None, :, :, 0])
                & (test.X[:, None] <= boxes[None, :, :, 1]),
                -1,
            )  # (n, k)
            own = inside[np.arange(len(test.X)), est.assign(test.X)]
            jac = matched_jaccard(list(boxes), train.boxes)
            rows.append({
                "tau_end": tau_end, "seed": seed, "rules": len(est.rules_),
                "in_own_box": round(float(own.mean()), 3),
                "in_no_box": round(float((~inside.any(1)).mean()), 3),
                "in_another_box_only": round(float((inside.any(1) & ~own).mean()), 3),
                "box_jaccard_mean": round(float(jac.mean()), 3),
                "test_nll": round(float(-est.score(test.X, test.y)), 3), "cpu_s": round(cpu, 2),
            })  # fmt: skip
            print(
                f"| {tau_end:g} | {seed} | {len(est.rules_)} | {own.mean():.3f} | "
                f"{(~inside.any(1)).mean():.3f} | {(inside.any(1) & ~own).mean():.3f} | "
                f"{jac.mean():.3f} | {-est.score(test.X, test.y):.3f} | {cpu:.1f} |",
                flush=True,
            )
    if args.json is not None:
        atomic_write_text(args.json, json.dumps({"rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
