"""The ``free-energy-mixer`` console script: ``reproduce``, and ``train`` / ``sample`` on your
own text.

Thin on purpose: torch, transformers and the experiments are imported inside the commands, so
``--help`` stays fast.
"""

from __future__ import annotations

from free_energy_mixer.experiments.costs import reproduce_help
from shared_core.cli import lazy_reproduce_command, make_main
from shared_core.textlm import text_lm_commands

main = make_main(
    "free-energy-mixer",
    [
        lazy_reproduce_command(
            "free_energy_mixer.experiments.reproduce",
            help=reproduce_help(),
        ),
        *text_lm_commands(
            "free_energy_mixer.hf:FEMConfig", "an FEM LM (prior: softmax, linear or gla)"
        ),
    ],
    description=(
        "Free Energy Mixer (ICLR 2026): reproduce the headline comparisons, or train and sample "
        "an FEM LM on your own text."
    ),
)

if __name__ == "__main__":
    raise SystemExit(main())
