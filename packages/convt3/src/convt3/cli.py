"""The ``convt3`` console script: ``convt3 reproduce [--scale micro|tiny|small|paper]``.

Thin on purpose: torch and the experiments are imported inside the command, so ``--help``
stays fast.
"""

from __future__ import annotations

from shared_core.cli import lazy_reproduce_command, make_main

main = make_main(
    "convt3",
    [
        lazy_reproduce_command(
            "convt3.experiments.reproduce",
            help=(
                "Train ConvT3, ConvS5 and ConvLSTM (equal parameters) on forced heat, "
                "advection-diffusion and pointwise dynamics on 16x16 grids (open-loop error up "
                "to 200 steps) and on moving digits (closed loop); micro: seconds, tiny: about "
                "5 minutes on 2 CPU cores with one thread, small: about an hour, paper: GPU-sized."
            ),
        )
    ],
    description="ConvT3 (ICLR 2026): ConvSSMs with 3x3 state kernels; reproduce the findings.",
)

if __name__ == "__main__":
    raise SystemExit(main())
