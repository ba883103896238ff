"""The ``toprovar`` console script: ``reproduce``, and ``train`` / ``calibrate`` / ``generate``
on a user's image folder (`toprovar.verbs`).

Thin on purpose: torch and the experiments are imported only when the command runs, so
``--help`` stays fast.
"""

from __future__ import annotations

import argparse

from shared_core.cli import lazy_reproduce_command, make_main
from shared_core.verbs import Slots, sample_command, train_command, verb_command
from toprovar.experiments import ESTIMATE_S
from toprovar.verbs import generate_options, train_options


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--min-depth",
        type=int,
        default=None,
        help="ablation: the earliest prunable scale (1-based, >= 2) instead of the scale's",
    )


main = make_main(
    "toprovar",
    [
        lazy_reproduce_command(
            "toprovar.experiments.reproduce",
            help=(
                "Train a tokenizer, a tiny VAR and an evaluator on digits and faces (cached), "
                "then generate unpruned and with ToProVAR (adaptive, top-k), FastVAR and SkipVAR "
                "at several budgets: MACs, wall/CPU speed-up, fidelity and quality (one thread; "
                f"micro: ~{ESTIMATE_S['micro']:.0f} CPU-s; tiny: ~{ESTIMATE_S['tiny']:.0f} CPU-s, "
                f"small: ~{ESTIMATE_S['small']:.0f} CPU-s with the generators cached, "
                "results/tiny.json, results/small.json; a first run also trains them; paper: "
                "GPU-sized, not run by the maintainers)."
            ),
            scales=("micro", "tiny", "small", "paper"),
            options=_options,
        ),
        train_command(
            "toprovar.verbs:train",
            "train the multi-scale VQ tokenizer and the VAR on an image folder (one sub-folder "
            "per class)",
            config="toprovar.verbs:TrainSettings",
            options=train_options,
        ),
        verb_command(
            "calibrate",
            "toprovar.verbs:calibrate",
            "ToProVAR's statistics from unpruned generations, saved beside the checkpoint",
            Slots(data="none", checkpoint="required", out="none"),
            config="toprovar.verbs:GenerateSettings",
        ),
        sample_command(
            "toprovar.verbs:generate",
            "generate images under a pruning policy and unpruned (same seeds): MACs per image, "
            "CPU time, speed-up; a grid PNG",
            name="generate",
            config="toprovar.verbs:GenerateSettings",
            options=generate_options,
        ),
    ],
    description="ToProVAR (ICLR 2026): entropy-guided token/layer/scale pruning for VAR; "
    "reproduce the findings, or train, calibrate and generate on your own images.",
)

if __name__ == "__main__":
    raise SystemExit(main())
