"""The ``crome`` console script: ``crome reproduce [--scale micro|tiny|small|paper] [--llm-oracle]``.

Thin on purpose: torch, transformers and the experiment are imported only when a command runs,
so ``crome --help`` answers at once.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from crome.experiments.config import SCALES
from shared_core.cli import ReproduceArgs, make_main, reproduce_command

REPRODUCE_HELP = (
    "Train a standard and a CROME reward model on the same preference pairs of a controlled "
    "world (causal: correct sum; spurious: decoration) and compare accuracy, sensitivity and "
    "Best-of-N: micro (random tiny BERT, smoke run) takes ~13 s of CPU, tiny (MiniLM-L6) ~190 s "
    "of CPU (about 3 min wall with --threads 1 on a quiet machine), small and paper are sized "
    "for a GPU."
)


def _reproduce(args: ReproduceArgs) -> int:
    from crome.experiments.controlled_world import run

    run(args, llm_oracle=_llm_choice(args.extra))
    return 0


def _llm_choice(extra: Mapping[str, Any]) -> bool | None:
    if extra.get("llm_oracle"):
        return True
    return False if extra.get("no_llm_oracle") else None


def _options(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--llm-oracle",
        action="store_true",
        help="also run the SmolLM2 oracle on a few prompts (default at small/paper; "
        "needs the 'llm' extra)",
    )
    g.add_argument("--no-llm-oracle", action="store_true", help="skip the SmolLM2 oracle run")


main = make_main(
    "crome",
    [reproduce_command(_reproduce, SCALES, REPRODUCE_HELP, options=_options)],
    description="CROME: causally robust reward modeling (ICLR 2026).",
)

if __name__ == "__main__":
    raise SystemExit(main())
