"""Console script ``masked-diffusion``: ``reproduce`` trains and samples MDLM on char Shakespeare.

Thin on purpose: the experiment module imports torch only inside its ``run``, so ``--help`` is fast.
"""

from __future__ import annotations

from masked_diffusion.experiments import shakespeare
from shared_core.cli import ReproduceArgs, make_main, reproduce_command


def _reproduce(args: ReproduceArgs) -> int:
    return shakespeare.run(args)


main = make_main(
    "masked-diffusion",
    [
        reproduce_command(
            _reproduce,
            shakespeare.SCALES,
            help=(
                "Train MDLM on char-level Shakespeare, report its validation NELBO against a "
                "unigram model and sample it with three samplers (micro: ~10 s, tiny: ~4 min "
                "on one busy CPU thread, small: ~20 CPU-minutes, paper: GPU-sized)."
            ),
        )
    ],
    description="MDLM masked diffusion baseline (Sahoo et al. 2024).",
)
