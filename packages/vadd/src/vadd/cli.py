"""Console script ``vadd``: ``reproduce`` compares VADD with the MDM at few sampling steps;
``train`` / ``sample`` / ``evaluate`` run VADD on a user's corpus or images (`vadd.verbs`).

Thin on purpose: the experiments and verbs import torch only when they run, so ``--help`` is fast.
"""

from __future__ import annotations

from masked_diffusion.verbs import sample_options, train_options

from shared_core.cli import ReproduceArgs, make_main, reproduce_command
from shared_core.verbs import evaluate_command, sample_command, train_command
from vadd.experiments.reproduce import ESTIMATE_S as COSTS  # the one cost figure (CPU s)
from vadd.experiments.scales import SCALES
from vadd.verbs import SAMPLERS, evaluate_flags


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
                f"of samples vs steps) (micro: ~{COSTS['micro']:.0f} CPU s, tiny: "
                f"~{COSTS['tiny']:.0f} CPU s, small: ~{COSTS['small'] / 60:.0f} CPU minutes on "
                "one thread; paper: GPU-sized; results/tiny.json, results/small.json)."
            ),
        ),
        train_command(
            "vadd.verbs:train",
            "Train VADD on a text corpus (char tokenizer) or grey images (.npz / image folder).",
            config="vadd.verbs:TrainSettings",
            options=train_options,
        ),
        sample_command(
            "vadd.verbs:sample",
            "Sample a checkpoint with the latent-conditioned sampler to .txt / .png / .npz.",
            options=sample_options(SAMPLERS),
        ),
        evaluate_command(
            "vadd.verbs:evaluate",
            "Valid bound on -log p_T (bits per char / per dim); --importance K adds the IW estimate.",
            options=evaluate_flags,
        ),
    ],
    description="Variational Autoencoding Discrete Diffusion (Xie et al., ICLR 2026).",
)
