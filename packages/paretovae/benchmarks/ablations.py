"""The three one-change ablations of the README, as one script writing their JSON (issue 67).

1. ``denoise``: ParetoVAE-symPareto on `reproduce --scale small`'s digits config (seeds 0-4),
   one change each: beta = 0, the exact objective with beta = 0 (0.1.0's default), tiny's
   width 64, tiny's 400 steps. PSNR / SSIM of the reconstructions of noisy held-out digits.
2. ``degrees-small``: small's degree vectors (seeds 0-4) with decoder scale s = 0.2 instead of
   1: VAE, LaplaceVAE, t3VAE, ParetoVAE-t (default beta and beta = 0). Reconstruction SW
   overall / tail / tail mass ratio (`metrics.reconstruction_metrics`), and ParetoVAE-t minus
   t3VAE and minus the VAE paired by seed (mean, 95% t-interval, seeds on which it is better).
3. ``degrees-tiny``: the same at tiny's sizes (seeds 0-2) for the five families.

Prints markdown tables (mean ± sd over seeds); ``--json`` writes every mean, sd, paired
difference and per-seed row, with the run's wall and CPU seconds.

    OMP_NUM_THREADS=1 python benchmarks/ablations.py --json results/ablations.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from paretovae.data import scale_free_degrees
from paretovae.experiments import denoise
from paretovae.experiments.common import LABELS, train_family
from paretovae.experiments.reproduce import SCALES
from paretovae.metrics import reconstruction_metrics
from scipy import stats

from shared_core.atomic import atomic_write_text

PARTS = ("denoise", "degrees-small", "degrees-tiny")
RECON_KEYS = ("sw", "tail_sw", "tail_mass_ratio")


def _summary(rows: list[dict[str, float]], keys: tuple[str, ...]) -> dict[str, Any]:
    """Mean and sd over seeds of each key, plus the per-seed rows."""
    out: dict[str, Any] = {"rows": rows}
    for key in keys:
        v = np.array([r[key] for r in rows], dtype=float)
        out[key] = {"mean": float(v.mean()), "sd": float(v.std(ddof=1)) if len(v) > 1 else 0.0}
    return out


def _paired(ours: list[dict[str, float]], base: list[dict[str, float]], key: str) -> dict[str, Any]:
    """``ours - base`` per seed (lower is better): mean, 95% t-interval, seeds ours is lower."""
    d = np.array([a[key] - b[key] for a, b in zip(ours, base, strict=True)], dtype=float)
    half = float(stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
    mean = float(d.mean())
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "better": int((d < 0).sum()),
            "seeds": len(d)}  # fmt: skip


def _fmt(s: dict[str, Any], key: str) -> str:
    return f"{s[key]['mean']:.4g} ± {s[key]['sd']:.2g}"


def _fmt_paired(p: dict[str, Any]) -> str:
    return f"{p['mean']:+.3f} [{p['lo']:+.3f}, {p['hi']:+.3f}] ({p['better']}/{p['seeds']})"


def ablate_denoise(quick: bool) -> dict[str, Any]:
    """ParetoVAE-symPareto at small's digits config, one change per setting."""
    base = SCALES["small"].denoise
    budget = dataclasses.replace(base.budget, families=("pareto-sympareto",))
    if quick:
        budget = dataclasses.replace(budget, seeds=2, train=SCALES["micro"].denoise.budget.train)
    tiny_train = budget.train if quick else SCALES["tiny"].denoise.budget.train
    settings = {
        "default (Theorem 2.1's beta, centred)": (base.vae, budget),
        "beta = 0 (centred)": (dataclasses.replace(base.vae, beta=0.0), budget),
        'objective="exact", beta = 0': (
            dataclasses.replace(base.vae, objective="exact", beta=0.0),
            budget,
        ),
        "width 64 (tiny's)": (dataclasses.replace(base.vae, hidden=64), budget),
        "400 steps (tiny's)": (base.vae, dataclasses.replace(budget, train=tiny_train)),
    }
    out: dict[str, Any] = {}
    print("| ParetoVAE-symPareto at small | PSNR | SSIM |\n| --- | --- | --- |")
    for label, (vae, b) in settings.items():
        res = denoise.run(dataclasses.replace(base, vae=vae, budget=b), seed=0)
        out[label] = _summary(res["metrics"]["pareto-sympareto"], ("psnr", "ssim"))
        print(f"| {label} | {_fmt(out[label], 'psnr')} | {_fmt(out[label], 'ssim')} |", flush=True)
    return out


def ablate_degrees(
    scale: str, families: dict[str, tuple[str, float | None]], quick: bool
) -> dict[str, Any]:
    """Reconstruction of `scale`'s held-out degree vectors with decoder scale s = 0.2."""
    cfg = SCALES[scale].heavy_tail
    budget = cfg.budget
    if quick:
        budget = dataclasses.replace(budget, seeds=2, train=SCALES["micro"].heavy_tail.budget.train)
    vae = dataclasses.replace(cfg.vae, recon_sigma=0.2)
    # the graphs of `heavy_tail.run`: data seeds 1 (train) and 3 (held out)
    x_train = scale_free_degrees(cfg.num_nodes, seed=1)
    x_test = scale_free_degrees(cfg.num_nodes, seed=3)
    out: dict[str, Any] = {}
    print(f"\n{scale}, s = 0.2 | SW | tail SW | tail mass ratio\n| --- | --- | --- | --- |")
    for label, (family, beta) in families.items():
        rows = []
        for k in range(budget.seeds):
            model = train_family(family, dataclasses.replace(vae, beta=beta), x_train, budget, k)
            recon = model.reconstruct(x_test)
            recon = recon[torch.isfinite(recon).all(dim=1)]
            rows.append(reconstruction_metrics(x_test, recon, cfg.recon_top))
        out[label] = _summary(rows, RECON_KEYS)
        cells = " | ".join(_fmt(out[label], k) for k in RECON_KEYS)
        print(f"| {label} | {cells} |", flush=True)
    for label, (family, _) in families.items():
        if family != "pareto-t":
            continue
        for base in ("t3vae", "vae"):
            base_rows = out[LABELS[base]]["rows"]
            paired = {k: _paired(out[label]["rows"], base_rows, k) for k in ("sw", "tail_sw")}
            out[label][f"paired_vs_{base}"] = paired
            print(f"{label} - {LABELS[base]}: SW {_fmt_paired(paired['sw'])}, "
                  f"tail SW {_fmt_paired(paired['tail_sw'])}")  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", default=list(PARTS), choices=PARTS)
    parser.add_argument("--quick", action="store_true", help="micro's steps, 2 seeds (smoke run)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    t0, c0 = time.time(), time.process_time()
    payload: dict[str, Any] = {"quick": args.quick}
    baselines = {LABELS[f]: (f, None) for f in ("vae", "laplace", "t3vae")}
    for part in args.only:
        p0 = time.process_time()
        if part == "denoise":
            payload[part] = ablate_denoise(args.quick)
        elif part == "degrees-small":
            fams = {**baselines, "ParetoVAE-t (default beta)": ("pareto-t", None),
                    "ParetoVAE-t, beta = 0": ("pareto-t", 0.0)}  # fmt: skip
            payload[part] = ablate_degrees("small", fams, args.quick)
        else:
            fams = {**baselines, **{LABELS[f]: (f, None) for f in ("pareto-t", "pareto-sympareto")}}
            payload[part] = ablate_degrees("tiny", fams, args.quick)
        payload[part]["cpu_s"] = time.process_time() - p0
        print(f"{part}: {payload[part]['cpu_s']:.1f} s CPU")
    payload["wall_s"], payload["cpu_s"] = time.time() - t0, time.process_time() - c0
    print(f"\nwall {payload['wall_s']:.0f} s, CPU {payload['cpu_s']:.0f} s, 1 thread")
    if args.json is not None:
        atomic_write_text(args.json, json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
