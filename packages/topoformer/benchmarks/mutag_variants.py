"""TopoFormer's filtration options and the paper text's dropout on MUTAG, at ``tiny``.

    python benchmarks/mutag_variants.py --json results/tiny-variants.json

Each variant is `run_mutag` with TopoFormer only, `tiny`'s model and training (d 32, FFN 256,
40 epochs) and the filtrations / dropout of the row, all 10 folds, seed 0, on one thread:
mean ± std over the folds of the honest (validation-selected) and the authors' (max test over
epochs) accuracy in %, their gap in points, and the CPU seconds (featurisation included).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from topoformer.experiments.mutag import MutagConfig, run_mutag
from topoformer.experiments.reproduce import SCALES

from shared_core.atomic import atomic_write_json

VARIANTS = {  # name: (filtrations, dropout)
    "ricci+hks (default)": (("ricci", "hks"), 0.0),
    "ricci+hks, dropout 0.5": (("ricci", "hks"), 0.5),
    "hks": (("hks",), 0.0),
    "degree+ricci": (("degree", "ricci"), 0.0),
    "degree": (("degree",), 0.0),
}


def _pct(xs: list[float]) -> list[float]:
    a = 100 * np.asarray(xs)
    return [round(float(a.mean()), 2), round(float(a.std(ddof=1)), 2)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", type=Path, required=True, help="where to write the results")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(1)
    tiny = SCALES["tiny"].mutag
    rows = {}
    c0 = time.process_time()
    for name, (filtrations, dropout) in VARIANTS.items():
        cfg = MutagConfig(
            filtrations=filtrations, model=replace(tiny.model, dropout=dropout),
            train=tiny.train, methods=("topoformer",),
        )  # fmt: skip
        res = run_mutag(cfg, seed=args.seed)
        sels = res.selections["topoformer"]
        honest, opt = [s.honest for s in sels], [s.optimistic for s in sels]
        rows[name] = {
            "filtrations": list(filtrations),
            "dropout": dropout,
            "honest_pct": _pct(honest),
            "authors_pct": _pct(opt),
            "gap_pp": round(100 * (float(np.mean(opt)) - float(np.mean(honest))), 2),
            "cpu_s": round(res.cpu_s["topoformer"], 1),
        }
        print(name, rows[name], flush=True)
    out = {
        "command": "python benchmarks/mutag_variants.py --json results/tiny-variants.json",
        "seed": args.seed,
        "threads": 1,
        "cpu_s": round(time.process_time() - c0, 1),
        "variants": rows,
    }
    atomic_write_json(args.json, out)


if __name__ == "__main__":
    main()
