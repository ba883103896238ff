"""The ``nextquill`` console script: ``reproduce [--scale micro|tiny|small|paper]``, and on a
user's data ``train-reference``, ``train`` and ``evaluate`` (`nextquill.verbs`)."""

from __future__ import annotations

import argparse
from typing import Any

from nextquill.experiments.costs import ablate_help, reproduce_help
from shared_core.cli import lazy_reproduce_command, make_main
from shared_core.verbs import Slots, evaluate_command, train_command, verb_command


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ablate",
        action="store_true",
        help=ablate_help(),
    )


def _lazy(name: str) -> Any:
    from nextquill import verbs  # no torch: verbs imports it inside the verbs

    return getattr(verbs, name)


TRAIN_SLOTS = Slots(data="required", checkpoint="optional", out="required", resume=True)

main = make_main(
    "nextquill",
    [
        lazy_reproduce_command(
            "nextquill.experiments.reproduce",
            help=reproduce_help(),
            options=_options,
        ),
        verb_command(
            "train-reference",
            "nextquill.verbs:train_reference",
            "train theta_D, the reference model of the data-side effect: --model DIR|smollm2 "
            "fine-tuned on all users' JSONL records with the history in the prompt",
            TRAIN_SLOTS,
            options=lambda p: _lazy("train_reference_options")(p),
        ),
        train_command(
            "nextquill.verbs:train",
            "fine-tune --model on one user's JSONL records with NextQuill (L_n + alpha L_p, "
            "token weights from --reference theta_D)",
            config="nextquill.loss:NextQuillConfig",
            options=lambda p: _lazy("train_options")(p),
        ),
        evaluate_command(
            "nextquill.verbs:evaluate",
            "ROUGE-1 / ROUGE-L F of the model's greedy reviews on held-out JSONL records",
            options=lambda p: _lazy("evaluate_options")(p),
            many=False,
        ),
    ],
    description="NextQuill (ICLR 2026): causal preference alignment for LLM personalisation.",
)

if __name__ == "__main__":
    raise SystemExit(main())
