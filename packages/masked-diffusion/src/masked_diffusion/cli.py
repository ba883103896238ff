"""Console script ``masked-diffusion``: ``reproduce`` (MDLM on char Shakespeare) and the verbs
``train`` / ``sample`` / ``evaluate`` on a user's corpus or images (`masked_diffusion.verbs`).

Thin on purpose: the experiment and verb modules import torch only when they run, so ``--help``
is fast.
"""

from __future__ import annotations

from masked_diffusion.experiments import shakespeare
from masked_diffusion.verbs import (
    MDLM_SAMPLERS,
    evaluate_options,
    sample_options,
    train_options,
)
from shared_core.cli import ReproduceArgs, make_main, reproduce_command
from shared_core.verbs import evaluate_command, sample_command, train_command

COSTS = shakespeare.ESTIMATE_S  # the one cost figure (CPU seconds per scale)


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
                "unigram model and sample it with three samplers (micro: "
                f"~{COSTS['micro']:.0f} CPU s, tiny: ~{COSTS['tiny']:.0f} CPU s on one thread, "
                f"small: ~{COSTS['small'] / 60:.0f} CPU minutes, paper: GPU-sized; "
                "results/tiny.json)."
            ),
        ),
        train_command(
            "masked_diffusion.verbs:train",
            "Train MDLM on a text corpus (char tokenizer) or grey images (.npz / image folder).",
            config="masked_diffusion.verbs:TrainSettings",
            options=train_options,
        ),
        sample_command(
            "masked_diffusion.verbs:sample",
            "Sample a checkpoint to a .txt file (text) or a .png grid / .npz (images).",
            options=sample_options(MDLM_SAMPLERS),
        ),
        evaluate_command(
            "masked_diffusion.verbs:evaluate",
            "Validation NELBO of a checkpoint on text or image files (bits per char / per dim).",
            options=evaluate_options,
        ),
    ],
    description="MDLM masked diffusion baseline (Sahoo et al. 2024).",
)
