"""The ``free-energy-mixer`` console script: ``free-energy-mixer reproduce [--scale ...]``.

Thin on purpose: torch and the experiments are imported inside the command, so ``--help``
stays fast.
"""

from __future__ import annotations

from shared_core.cli import lazy_reproduce_command, make_main

main = make_main(
    "free-energy-mixer",
    [
        lazy_reproduce_command(
            "free_energy_mixer.experiments.reproduce",
            help=(
                "Train softmax, linear and gated linear attention with and without FEM on "
                "per-channel selective recall (accuracy vs heads) and a Shakespeare char-LM "
                "(validation bits per char) (micro: ~30 s, tiny: ~3 CPU-minutes with one "
                "thread, 10 min wall on 2 heavily shared cores, small: hours on CPU, paper: "
                "GPU-sized)."
            ),
        )
    ],
    description="Free Energy Mixer (ICLR 2026): reproduce the headline comparisons.",
)

if __name__ == "__main__":
    raise SystemExit(main())
