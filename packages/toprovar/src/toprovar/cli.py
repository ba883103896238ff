"""The ``toprovar`` console script: ``toprovar reproduce [--scale micro|tiny|small|paper]``.

Thin on purpose: torch and the experiments are imported only when the command runs, so
``--help`` stays fast.
"""

from __future__ import annotations

import argparse

from shared_core.cli import lazy_reproduce_command, make_main


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
                "at several budgets: MACs, wall/CPU speed-up, fidelity and quality (micro: "
                "seconds; tiny: a few CPU-minutes with one thread; small: under 30 "
                "CPU-minutes; paper: GPU-sized, not run by the maintainers)."
            ),
            scales=("micro", "tiny", "small", "paper"),
            options=_options,
        )
    ],
    description="ToProVAR (ICLR 2026): entropy-guided token/layer/scale pruning for VAR.",
)

if __name__ == "__main__":
    raise SystemExit(main())
