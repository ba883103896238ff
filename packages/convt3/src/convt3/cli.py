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
                "Train ConvT3 and ConvS5 with 1x1 and 3x3 input/output (B/C) kernels and a "
                "ConvLSTM (equal parameters) on forced PDEs on 16x16 grids, open loop beyond the "
                "training length, over seeds; small and paper add moving digits. micro: seconds, "
                "tiny: about 2 CPU-minutes (heat, two seeds), small: about an hour, paper: GPU-sized."
            ),
        )
    ],
    description="ConvT3 (ICLR 2026): ConvSSMs with 3x3 state kernels; reproduce the findings.",
)

if __name__ == "__main__":
    raise SystemExit(main())
