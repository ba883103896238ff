"""Collect one-arm-per-process `reproduce` runs (README, "Reproduce") over seeds into one small
results file: per run the paper's metrics, CPU times and the learned rates' range, and per arm
the mean, min and max over seeds of every metric.

    python benchmarks/collect_seeds.py --out results/tiny-seeds.json \\
        --run vanilla 0 runs/full-s0#vanilla --run vanilla 1 runs/vanilla-s1 ...

``--run KEY SEED DIR[#ARM]``: DIR is the ``out`` folder of one `reproduce` call (its newest
``metrics.json`` below it is read); ``#ARM`` picks one arm of a run that trained several.
``--copy FILE KEY``: copy arm KEY of an earlier file this script wrote (its runs and summary,
unchanged, with ``"copied_from": FILE``), so that a table can show the baselines beside new arms:

    python benchmarks/collect_seeds.py --out results/tiny-ablations-r11.json \
        --copy results/tiny-seeds.json vanilla --run meld-nodes 0 runs/nodes-s0 ...
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
        k: cfg[k]
        for k in (
            "gradient",
            "recon",
            "tau",
            "eps",
            "phi_lr_factor",
            "sampling_eps",
            "steps",
            "sample_steps",
        )
        if k in cfg
    } | {"arm": arm, "normalise": arm.endswith("normalised")}
    if "eps" not in cfg and isinstance(cfg.get("meld"), dict):  # 0.4.4+: MELDConfig.eps only
        out["config"]["eps"] = cfg["meld"]["eps"]
    if arm.startswith("meld"):  # the arm's own MELDConfig fields (`experiments.qm9._meld_config`)
        elements = {"meld-nodes": "nodes", "meld-edges": "edges"}.get(arm, "nodes+edges")
        out["config"] |= {"elements": elements, "permute": arm != "meld-fixed"}
    commit = doc.get("environment", {}).get("git_commit")
    if commit:
        out["git_commit"] = commit
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", nargs=3, action="append", metavar=("KEY", "SEED", "DIR"), default=[])
    ap.add_argument("--copy", nargs=2, action="append", metavar=("FILE", "KEY"), default=[])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    arms: dict[str, dict[str, object]] = {}
    for file, key in a.copy:
        earlier = json.loads(Path(file).read_text())["arms"]
        if key not in earlier:
            raise ValueError(f"--copy: no arm {key!r} in {file} (it has {sorted(earlier)})")
        arms[key] = dict(earlier[key]) | {"copied_from": file}
    for key, seed, path in a.run:
        if "copied_from" in arms.get(key, {}):
            raise ValueError(f"--run {key}: that key is copied with --copy; name the new one apart")
        arms.setdefault(key, {"runs": {}})["runs"][seed] = one_run(path)  # type: ignore[index]
    for entry in arms.values():
        if "copied_from" in entry:
            continue
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
