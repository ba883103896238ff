"""ParetoVAE's beta at tiny: the paper gives no value, so a small sweep (one seed per point).

For beta in {0, 0.1, 0.3, Theorem 2.1's constant (the default), 3} and both ParetoVAE
decoders (centred objective), the `reproduce --scale tiny` experiments with one seed each:
tail MMD / SW of the 2-D and degree data, the paper's corpus head/tail Jaccard of the
Shakespeare bag of words, PSNR of salt-and-pepper digits. Prints one markdown table.

    OMP_NUM_THREADS=1 python benchmarks/sweep_beta.py [--seed 0]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import torch
from paretovae.experiments import denoise, heavy_tail, words
from paretovae.experiments.reproduce import SCALES

BETAS: tuple[float | None, ...] = (0.0, 0.1, 0.3, None, 3.0)
FAMILIES = ("pareto-t", "pareto-sympareto")


def _one_seed(cfg, beta: float | None):  # type: ignore[no-untyped-def]
    budget = dataclasses.replace(cfg.budget, families=FAMILIES, seeds=1)
    return dataclasses.replace(cfg, budget=budget, vae=dataclasses.replace(cfg.vae, beta=beta))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    tiny = SCALES["tiny"]
    print("| decoder | beta | 2-D tail MMD | degrees tail MMD | words head J | words tail J "
          "| digits PSNR |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- |")
    rows: dict[tuple[str, str], list[str]] = {}
    t0, c0 = time.time(), time.process_time()
    for beta in BETAS:
        ht = heavy_tail.run(_one_seed(tiny.heavy_tail, beta), seed=args.seed)["metrics"]
        wd = words.run(_one_seed(tiny.words, beta), seed=args.seed)["metrics"]
        dn = denoise.run(_one_seed(tiny.denoise, beta), seed=args.seed)["metrics"]
        for fam in FAMILIES:
            b = "Thm 2.1" if beta is None else f"{beta:g}"
            w = wd[fam][0]
            rows[(fam, b)] = [
                f"{ht['synthetic'][fam][0]['tail_mmd']:.4f}",
                f"{ht['degrees'][fam][0]['tail_mmd']:.4f}",
                f"{w['corpus_head_jaccard']:.3f}",
                f"{w['corpus_tail_jaccard']:.3f}",
                f"{dn[fam][0]['psnr']:.2f}",
            ]
    for (fam, b), vals in sorted(rows.items()):
        print(f"| {fam} | {b} | " + " | ".join(vals) + " |")
    print(f"\nwall {time.time() - t0:.0f} s, CPU {time.process_time() - c0:.0f} s, 1 thread")


if __name__ == "__main__":
    main()
