"""Console script ``vadd``: ``reproduce`` compares VADD with the MDM at few sampling steps.

Thin on purpose: the experiments import torch only when they run, so ``--help`` is fast.
"""

from __future__ import annotations

from shared_core.cli import ReproduceArgs, make_main, reproduce_command
from vadd.experiments.scales import SCALES


def _reproduce(args: ReproduceArgs) -> int:
    from vadd.experiments.reproduce import run

    return run(args)


main = make_main(
    "vadd",
    [
        reproduce_command(
            _reproduce,
            SCALES,
            help=(
                "Train an MDM and a VADD with the same decoder on a 2-D checkerboard (exact TV "
                "of the T-step sampler), on binarised 8x8 digits (valid bits/dim, pixel "
                "statistics) and on char-level Shakespeare (generative perplexity and entropy "
                "of samples vs steps) (micro: ~15 s, tiny: ~4 min, small: ~16 min of CPU on "
                "one thread; paper: GPU-sized)."
            ),
        )
    ],
    description="Variational Autoencoding Discrete Diffusion (Xie et al., ICLR 2026).",
)
