"""The ``crome`` console script: ``reproduce``, and ``augment``/``train``/``score``/``evaluate``
(`crome.verbs`) on a user's preference pairs.

Thin on purpose: torch, transformers and the experiment are imported only when a command runs,
so ``crome --help`` answers at once.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crome.experiments.config import SCALES
from shared_core.cli import ReproduceArgs, make_main, reproduce_command
from shared_core.verbs import (
    Slots,
    evaluate_command,
    predict_command,
    train_command,
    verb_command,
)

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


def _train_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        default="minilm",
        metavar="DIR",
        help="encoder folder for a fresh reward model, or 'minilm' (the minilm extra; default)",
    )
    p.add_argument("--max-length", type=int, default=64, help="tokens per (prompt, answer)")


def _augment_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--oracle",
        required=True,
        metavar="SPEC",
        help="world (the synthetic world's exact oracle), smollm2 (offline, the llm extra), "
        "a local causal-LM folder, or an OpenAI-compatible http(s) URL",
    )
    p.add_argument("--oracle-model", help="the served model's name (URL oracles)")
    p.add_argument("--cache", type=Path, metavar="DIR", help="oracle cache (<out>.oracle_cache)")
    p.add_argument("--max-rubrics", type=int, default=3, help="rubrics used per prompt")


main = make_main(
    "crome",
    [
        reproduce_command(_reproduce, SCALES, REPRODUCE_HELP, options=_options),
        verb_command(
            "augment",
            "crome.verbs:augment",
            "add causal and neutral augmentations of preference pairs from an oracle (cached)",
            Slots(data="required", checkpoint="none", out="required"),
            options=_augment_options,
        ),
        train_command(
            "crome.verbs:train",
            "train a reward model (Bradley-Terry + tie loss) on preference/tie pairs",
            config="crome.train:TrainConfig",
            options=_train_options,
        ),
        predict_command(
            "crome.verbs:score",
            "rewards of each pair's two answers and their margin (CSV)",
            name="score",
        ),
        evaluate_command(
            "crome.verbs:evaluate",
            "pairwise accuracy (overall, per provenance) and tie accuracy on neutral pairs",
        ),
    ],
    description="CROME: causally robust reward modeling (ICLR 2026).",
)

if __name__ == "__main__":
    raise SystemExit(main())
