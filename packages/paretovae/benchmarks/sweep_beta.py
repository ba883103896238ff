"""ParetoVAE's beta (and objective) at tiny: the paper states no beta, so a small sweep.

For each beta (default: 0, 0.1, 0.3, Theorem 2.1's constant = the package default, 3) and
both ParetoVAE decoders, the `reproduce --scale tiny` experiments with `--seeds` seeds
(default 1): tail MMD of generated 2-D and degree points, SW of the 2-D reconstructions, the
paper's corpus head/tail Jaccard of the Shakespeare bag of words, PSNR of salt-and-pepper
digits. Prints one markdown table (mean over seeds).

    OMP_NUM_THREADS=1 python benchmarks/sweep_beta.py [--objective exact] [--betas 0 thm]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
import torch
from paretovae.experiments import denoise, heavy_tail, words
from paretovae.experiments.reproduce import SCALES

FAMILIES = ("pareto-t", "pareto-sympareto")


def _config(cfg, beta: float | None, objective: str, seeds: int):  # type: ignore[no-untyped-def]
    budget = dataclasses.replace(cfg.budget, families=FAMILIES, seeds=seeds)
    vae = dataclasses.replace(cfg.vae, beta=beta, objective=objective)
    return dataclasses.replace(cfg, budget=budget, vae=vae)


def _mean(rows: list[dict[str, float]], key: str) -> float:
    return float(np.mean([r[key] for r in rows]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--objective", default="centred", choices=("centred", "exact"))
    parser.add_argument("--betas", nargs="+", default=["0", "0.1", "0.3", "thm", "3"])
    args = parser.parse_args()
    torch.set_num_threads(1)
    tiny = SCALES["tiny"]
    print(f"objective {args.objective}, {args.seeds} seed(s) from {args.seed}, tiny budget\n")
    print("| decoder | beta | 2-D tail MMD | 2-D recon SW | degrees tail MMD | words head J "
          "| words tail J | digits PSNR |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    t0, c0 = time.time(), time.process_time()
    for b in args.betas:
        beta = None if b == "thm" else float(b)
        ht = heavy_tail.run(_config(tiny.heavy_tail, beta, args.objective, args.seeds), args.seed)
        wd = words.run(_config(tiny.words, beta, args.objective, args.seeds), args.seed)
        dn = denoise.run(_config(tiny.denoise, beta, args.objective, args.seeds), args.seed)
        for fam in FAMILIES:
            vals = [
                f"{_mean(ht['metrics']['synthetic'][fam], 'tail_mmd'):.4f}",
                f"{_mean(ht['recon']['synthetic'][fam], 'sw'):.3f}",
                f"{_mean(ht['metrics']['degrees'][fam], 'tail_mmd'):.4f}",
                f"{_mean(wd['metrics'][fam], 'corpus_head_jaccard'):.3f}",
                f"{_mean(wd['metrics'][fam], 'corpus_tail_jaccard'):.3f}",
                f"{_mean(dn['metrics'][fam], 'psnr'):.2f}",
            ]
            label = "Thm 2.1" if beta is None else f"{beta:g}"
            print(f"| {fam} | {label} | " + " | ".join(vals) + " |", flush=True)
    print(f"\nwall {time.time() - t0:.0f} s, CPU {time.process_time() - c0:.0f} s, 1 thread")


if __name__ == "__main__":
    main()
