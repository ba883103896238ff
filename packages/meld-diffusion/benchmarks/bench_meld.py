"""MELD's cost over vanilla masked diffusion (the schedule network's overhead), and validity
throughput, on shared_core.bench.

1. One training step (loss + backward) of the tiny-scale graph transformer on QM9-sized graphs
   (N = 9 atoms, 45 elements, batch 64): MELD (`meld_loss`: rates from H's columns, random
   columns per graph, straight-through masks, embeddings into the denoiser) against vanilla MDM
   (`vanilla_loss`, i.e. masked_diffusion's ``q_xt`` + ``nelbo_terms``), the peer a user would
   otherwise run.
2. Sampling 250 graphs in 50 steps: `meld_sample` (per-element unmask probabilities through
   ``ancestral_sample``'s hook) against `masked_diffusion.ancestral_sample` (`vanilla_sample`).
3. Validity computation: `decode` + `shared_core.mol_metrics.validity` (RDKit sanitisation, no
   correction) of 250 graphs against RDKit parsing the same molecules' SMILES
   (``Chem.MolFromSmiles``, which sanitises).
Random weights (speed does not depend on training).
"""

from __future__ import annotations

from dataclasses import replace

import torch
from meld_diffusion import (
    ElementRates,
    GraphMDM,
    GraphTransformer,
    decode,
    meld_loss,
    meld_sample,
    qm9_graphs,
    vanilla_loss,
    vanilla_sample,
)
from meld_diffusion.experiments.qm9 import SCALES

from shared_core import mol_metrics as mm
from shared_core.bench import BenchTable, bench_parser, finish, measure


def main() -> None:
    a = bench_parser(__doc__ or "").parse_args()
    repeats = 3 if a.quick else a.repeats
    cfg = SCALES["tiny"]
    data = qm9_graphs(limit=300, seed=0)
    x0, n = torch.as_tensor(data.rows[:64]), torch.as_tensor(data.n_atoms[:64])
    torch.manual_seed(0)
    model = GraphMDM(GraphTransformer(cfg.denoiser))
    meld = GraphMDM(
        GraphTransformer(replace(cfg.denoiser, d_pos=cfg.meld.dim)), ElementRates(cfg.meld)
    )
    schedule = cfg.meld.schedule()
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731

    def step_vanilla() -> None:
        vanilla_loss(model, x0, n, schedule.base, max_atoms=9, generator=g()).loss.backward()

    def step_meld() -> None:
        meld_loss(meld, x0, n, schedule, max_atoms=9, generator=g()).loss.backward()

    train = BenchTable("One training step (loss + backward), batch 64, N = 9", "MELD")
    train.add(
        "tiny graph transformer",
        measure(
            {"MELD": step_meld, "vanilla MDM": step_vanilla}, repeats=repeats, threads=a.threads
        ),
    )

    counts = torch.as_tensor(data.n_atoms[:250])
    steps = 10 if a.quick else 50
    sample = BenchTable(f"Sampling 250 graphs, {steps} steps", "MELD")
    sample.add(
        f"steps={steps}",
        measure(
            {
                "MELD": lambda: meld_sample(meld, counts, max_atoms=9, steps=steps, schedule=schedule, generator=g()),
                "vanilla MDM": lambda: vanilla_sample(model, counts, max_atoms=9, steps=steps, schedule=schedule.base, generator=g()),
            },
            repeats=repeats, threads=a.threads,
        ),
    )  # fmt: skip

    from rdkit import Chem, rdBase

    rows, smiles = data.rows[:250], list(data.smiles[:250])

    def rdkit_smiles() -> None:
        with rdBase.BlockLogs():
            [Chem.MolFromSmiles(s) for s in smiles]

    valid = BenchTable("Validity of 250 QM9 graphs (decode + sanitise)", "graphs")
    valid.add(
        "250 molecules",
        measure(
            {
                "graphs": lambda: mm.validity(decode(rows, data.n_atoms[:250], 9)),
                "RDKit from SMILES": rdkit_smiles,
            },
            repeats=repeats, threads=a.threads,
        ),
    )  # fmt: skip
    finish([train, sample, valid], a.json)


if __name__ == "__main__":
    main()
