"""Console script ``pgm-diffusion``: ``reproduce`` compares PGM with MDLM on text and digits;
``train`` / ``sample`` / ``evaluate`` run PGM on a user's corpus or images (`pgm.verbs`).

Thin on purpose: the experiments and verbs import torch only when they run, so ``--help`` is fast.
"""

from __future__ import annotations

from masked_diffusion.verbs import evaluate_options, sample_options, train_options

from pgm.experiments.common import SCALES
from pgm.experiments.reproduce import ESTIMATE_S as COSTS  # the one cost figure (CPU s)
from pgm.verbs import SAMPLERS
from shared_core.cli import ReproduceArgs, make_main, reproduce_command
from shared_core.verbs import evaluate_command, sample_command, train_command


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
                f"compare sampling throughput and sample quality (micro: ~{COSTS['micro']:.0f} "
                f"CPU s, tiny: ~{COSTS['tiny']:.0f} CPU s, small: ~{COSTS['small'] / 60:.0f} "
                "CPU minutes on one thread; paper: GPU-sized, not run here; results/tiny.json)."
            ),
        ),
        train_command(
            "pgm.verbs:train",
            "Train a PGM on a text corpus (char tokenizer) or grey images (.npz / image folder).",
            config="pgm.verbs:TrainSettings",
            options=train_options,
        ),
        sample_command(
            "pgm.verbs:sample",
            "Sample a checkpoint with the packed partition sampler (default) to .txt / .png / .npz.",
            options=sample_options(SAMPLERS),
        ),
        evaluate_command(
            "pgm.verbs:evaluate",
            "Validation NELBO of a checkpoint (MDLM's estimator; bits per char / per dim).",
            options=evaluate_options,
        ),
    ],
    description="Partition Generative Models (Deschenaux et al., ICLR 2026) vs MDLM.",
)
