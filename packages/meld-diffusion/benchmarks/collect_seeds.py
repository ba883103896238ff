"""Collect one-arm-per-process `reproduce` runs (README, "Reproduce") over seeds into one small
results file: per run the paper's metrics, CPU times and the learned rates' range, and per arm
the mean, min and max over seeds of every metric.

    python benchmarks/collect_seeds.py --out results/tiny-seeds.json \\
        --run vanilla 0 runs/full-s0#vanilla --run vanilla 1 runs/vanilla-s1 ...

``--run KEY SEED DIR[#ARM]``: DIR is the ``out`` folder of one `reproduce` call (its newest
``metrics.json`` below it is read); ``#ARM`` picks one arm of a run that trained several.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

METRICS = (
    "validity", "uniqueness", "novelty", "fcd", "nspdk", "scaffold", "connected",
    "train_cpu_s", "sample_cpu_s", "final_loss", "node_rate_min", "node_rate_max",
    "bond_rate_min", "bond_rate_median", "bond_rate_max",
)  # fmt: skip


def one_run(path: str) -> dict[str, object]:
    folder, _, arm = path.partition("#")
    files = sorted(Path(folder).rglob("metrics.json"))
    if not files:
        raise FileNotFoundError(f"no metrics.json below {folder}")
    doc = json.loads(files[-1].read_text())
    results = doc["metrics"]["results"]
    arms = doc["config"]["arms"]
    arm = arm or (arms[0] if len(arms) == 1 else "")
    if arm not in results:
        raise ValueError(f"{path}: name one arm of {arms} with #ARM")
    r = results[arm]
    out: dict[str, object] = {k: r[k] for k in METRICS if k in r}
    rates = r.get("learned_rates", {})
    nodes = [v for k, v in rates.items() if k.startswith("node column")]
    if nodes:
        out |= {"node_rate_min": min(nodes), "node_rate_max": max(nodes)}
        out |= {f"bond_rate_{q}": rates[f"bond {q}"] for q in ("min", "median", "max")}
    elif rates:
        out["rates"] = rates
    if len(arms) == 1:  # the process's own CPU and wall time
        out |= {"process_cpu_s": doc["cpu_s"], "process_wall_s": doc["elapsed_s"]}
    cfg = doc["config"]
    out["config"] = {
        k: cfg[k] for k in ("gradient", "recon", "tau", "eps", "phi_lr_factor", "sampling_eps")
    } | {"arm": arm, "normalise": arm.endswith("normalised")}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", nargs=3, action="append", metavar=("KEY", "SEED", "DIR"))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    arms: dict[str, dict[str, object]] = {}
    for key, seed, path in a.run:
        arms.setdefault(key, {"runs": {}})["runs"][seed] = one_run(path)  # type: ignore[index]
    for entry in arms.values():
        runs = list(entry["runs"].values())  # type: ignore[union-attr]
        keys = [k for k in (*METRICS, "process_cpu_s") if all(k in r for r in runs)]
        vals = {k: np.array([float(r[k]) for r in runs]) for k in keys}
        entry["seeds"] = len(runs)
        entry["mean"] = {k: float(v.mean()) for k, v in vals.items()}
        entry["min"] = {k: float(v.min()) for k, v in vals.items()}
        entry["max"] = {k: float(v.max()) for k, v in vals.items()}
    Path(a.out).write_text(json.dumps({"arms": arms}, indent=1) + "\n")
    for key, entry in arms.items():
        m, lo, hi = entry["mean"], entry["min"], entry["max"]  # type: ignore[index]
        print(key, {k: f"{m[k]:.4g} [{lo[k]:.4g}, {hi[k]:.4g}]" for k in m})  # type: ignore[index]


if __name__ == "__main__":
    main()
