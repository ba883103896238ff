"""Paired differences, ParetoVAE minus each baseline, from one `reproduce` run's metrics.json.

Seed k of every family trains on the same mini-batches from the same torch seed, so the
families are paired by seed. For each headline metric, prints a markdown table of the mean
paired difference (ParetoVAE - baseline) with its 95% t-interval over the seeds and the
number of seeds on which ParetoVAE is better (lower SW, higher Jaccard / PSNR / SSIM).

    python benchmarks/paired.py runs/paretovae/<timestamp>-small/metrics.json [--json out.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from shared_core.atomic import atomic_write_text

BASELINES = ("vae", "laplace", "t3vae")
# (title, path into metrics, key, ParetoVAE decoder, lower is better)
METRICS = (
    ("degrees, recon SW", ("reconstruction", "degrees"), "sw", "pareto-t", True),
    ("degrees, recon tail SW", ("reconstruction", "degrees"), "tail_sw", "pareto-t", True),
    ("2-D, recon SW", ("reconstruction", "synthetic"), "sw", "pareto-t", True),
    ("2-D, generated tail MMD", ("heavy_tail", "synthetic"), "tail_mmd", "pareto-t", True),
    ("words, head Jaccard", ("words", "metrics"), "corpus_head_jaccard", "pareto-t", False),
    ("words, tail Jaccard", ("words", "metrics"), "corpus_tail_jaccard", "pareto-t", False),
    ("digits, PSNR", ("denoise", "metrics"), "psnr", "pareto-sympareto", False),
    ("digits, SSIM", ("denoise", "metrics"), "ssim", "pareto-sympareto", False),
)


def paired_rows(metrics: dict[str, Any]) -> list[dict[str, str]]:
    """One row per (metric, baseline): mean difference, 95% t-interval, wins / seeds."""
    rows = []
    for title, path, key, ours, lower in METRICS:
        by_family = metrics[path[0]][path[1]]
        a = np.array([r[key] for r in by_family[ours]], dtype=float)
        for base in BASELINES:
            d = a - np.array([r[key] for r in by_family[base]], dtype=float)
            half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
            wins = int(np.sum(d < 0 if lower else d > 0))
            rows.append(
                {
                    "metric": title,
                    "ParetoVAE - baseline": f"{ours} - {base}",
                    "mean": f"{d.mean():+.4g}",
                    "95% interval": f"[{d.mean() - half:+.3g}, {d.mean() + half:+.3g}]",
                    "ParetoVAE better": f"{wins}/{len(d)}",
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("metrics_json")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = parser.parse_args()
    with open(args.metrics_json) as f:
        metrics = json.load(f)["metrics"]
    rows = paired_rows(metrics)
    print("| " + " | ".join(rows[0]) + " |")
    print("|" + " --- |" * len(rows[0]))
    for r in rows:
        print("| " + " | ".join(r.values()) + " |")
    if args.json is not None:
        # the run's own metrics beside the differences: a README table quoting both (the
        # per-claim summary at small) names this one file
        payload = {"metrics_json": Path(args.metrics_json).name, "rows": rows, "run": metrics}
        atomic_write_text(args.json, json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
