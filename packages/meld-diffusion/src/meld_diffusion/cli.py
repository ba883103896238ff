"""The ``meld-diffusion`` console script: ``meld-diffusion reproduce [--scale micro|tiny|small|paper]``."""

from __future__ import annotations

from shared_core.cli import lazy_reproduce_command, make_main

main = make_main(
    "meld-diffusion",
    [
        lazy_reproduce_command(
            "meld_diffusion.experiments.qm9",
            help="MELD (the paper's H-embedding schedule) vs vanilla masked diffusion (power law) "
            "and a class-level learned schedule on real QM9 (same graph transformer, steps and "
            "batches; validity without correction, uniqueness, novelty, FCD, NSPDK, scaffold "
            "similarity) and the exact state-clashing study on QM9 molecules with <= 4 heavy "
            "atoms. micro takes seconds, tiny ~247 CPU-s (1 thread; results/tiny.json), small "
            "about half an hour, paper is GPU-sized. Needs the 'data' extra (qm9pack); the 'fcd' extra "
            "adds the ChemNet FCD.",
        )
    ],
    description="MELD (ICLR 2026): masked element-wise learnable diffusion for molecular graphs.",
)

if __name__ == "__main__":
    raise SystemExit(main())
