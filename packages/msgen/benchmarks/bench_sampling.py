"""Sampling cost per conformer: MSGEN (two stages + upsampling) vs its base generator alone vs
RDKit ETKDG; and COV/MAT evaluation throughput (RDKit GetBestRMS vs the brute-force oracle).

1. Untrained EGNN networks (the ``network="egnn"`` option with the DDPM sampler; 0.1.0's
   tiny size: hidden 64, 4 layers, 100 diffusion steps):
   sampling cost does not depend on the weights. 8 QM9 molecules x 2 conformers per call.
   "MSGEN" runs stage 1 on the heavy atoms, upsamples, runs stage 2 on all atoms; its extra
   cost over "single-scale" is the stage-1 chain (on fewer atoms) and the upsampling.
2. One (reference, generated) RMSD: `shared_core.mol_metrics.conformer_rmsd` (GetBestRMS
   after RemoveHs, as MSGEN's covmat.py) vs `msgen.reference.best_rmsd_bruteforce` (Kabsch over
   every automorphism).

One thread, CPU time.
"""

from __future__ import annotations

import numpy as np
import torch
from msgen.data import qm9_conformers, with_positions
from msgen.diffusion import DiffusionConfig, DiffusionGenerator
from msgen.evaluation import etkdg
from msgen.model import DenoiserConfig
from msgen.multiscale import MSGEN
from msgen.reference import best_rmsd_bruteforce

from shared_core.bench import BenchTable, bench_parser, finish, measure
from shared_core.mol_metrics import conformer_rmsd


def _gen(guided: bool, steps: int) -> DiffusionGenerator:
    torch.manual_seed(0)
    gen = DiffusionGenerator(
        DiffusionConfig(
            network="egnn", sampler="ddpm", denoiser=DenoiserConfig(guided=guided), steps=steps
        )
    )
    gen.fitted = True  # untrained weights: sampling cost does not depend on them
    return gen


def main() -> None:
    p = bench_parser(__doc__.splitlines()[0])
    ns = p.parse_args()
    repeats = 3 if ns.quick else ns.repeats
    steps = 20 if ns.quick else 100
    _, test = qm9_conformers(1, 8, pool=1000, seed=0)
    k = 2
    ms = MSGEN([_gen(False, steps), _gen(True, steps)])
    single = _gen(False, steps)
    sampling = BenchTable(
        f"Sampling 8 QM9 molecules x {k} conformers ({steps} diffusion steps)", candidate="MSGEN"
    )
    results = measure(
        {
            "MSGEN": lambda: ms.sample(test, k, seed=0),
            "single-scale": lambda: single.sample(test, k, seed=0),
            "ETKDG": lambda: [etkdg(g, k, seed=0) for g in test],
            "ETKDG + MMFF": lambda: [etkdg(g, k, seed=0, mmff=True) for g in test],
        },
        repeats=repeats,
        threads=ns.threads,
    )
    sampling.add(
        f"{len(test)} molecules, {np.mean([g.num_atoms for g in test]):.1f} atoms", results
    )

    rmsd = BenchTable("One heavy-atom best RMSD", candidate="GetBestRMS (shared_core)")
    for g in test[:3]:
        gen = etkdg(g, 1, seed=1)[0]
        res = measure(
            {
                "GetBestRMS (shared_core)": lambda g=g, gen=gen: conformer_rmsd(
                    [g], [with_positions(g, gen)]
                ),  # type: ignore[misc]
                "brute force (reference)": lambda g=g, gen=gen: best_rmsd_bruteforce(
                    g, g.positions, gen
                ),  # type: ignore[misc]
            },
            repeats=repeats,
            threads=ns.threads,
        )
        rmsd.add(f"{int((g.atomic_numbers > 1).sum())} heavy atoms", res)
    finish([sampling, rmsd], ns.json)


if __name__ == "__main__":
    main()
