"""Console script ``pgm-diffusion``: ``reproduce`` compares PGM with MDLM on text and digits.

Thin on purpose: the experiments import torch only when they run, so ``--help`` is fast.
"""

from __future__ import annotations

from pgm.experiments.common import SCALES
from shared_core.cli import ReproduceArgs, make_main, reproduce_command


def _reproduce(args: ReproduceArgs) -> int:
    from pgm.experiments.reproduce import run

    return run(args)


main = make_main(
    "pgm-diffusion",
    [
        reproduce_command(
            _reproduce,
            SCALES,
            help=(
                "Train MDLM and PGM on the same budget on char Shakespeare and 8x8 digits and "
                "compare sampling throughput and sample quality (micro: ~20 s, tiny: ~4 min on "
                "one busy CPU thread, small/paper: GPU-sized, not run here)."
            ),
        )
    ],
    description="Partition Generative Models (Deschenaux et al., ICLR 2026) vs MDLM.",
)
