"""The ``nextquill`` console script: ``nextquill reproduce [--scale micro|tiny|small|paper]``."""

from __future__ import annotations

import argparse

from shared_core.cli import lazy_reproduce_command, make_main


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ablate",
        action="store_true",
        help="instead of the arms: NextQuill vs L_n only (paper form) under one change each "
        "(alpha 0.5, delta 0.2, theta_D trained 2x longer); tiny takes about 5 CPU-minutes",
    )


main = make_main(
    "nextquill",
    [
        lazy_reproduce_command(
            "nextquill.experiments.reproduce",
            help="Planted-preference users, tiny Llama: ContextSFT vs L_n only vs L_p only vs "
            "NextQuill (paper and code forms), 3 seeds; micro takes seconds, tiny about 4 "
            "CPU-minutes, small (ContextSFT, L_n only, NextQuill; 5 seeds) about 13, paper "
            "adds SmolLM2-135M + LoRA on Shakespeare characters and your reviews (hours).",
            options=_options,
        )
    ],
    description="NextQuill (ICLR 2026): causal preference alignment for LLM personalisation.",
)

if __name__ == "__main__":
    raise SystemExit(main())
