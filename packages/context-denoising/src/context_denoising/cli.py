"""The ``context-denoising`` console script: ``reproduce [--scale ...]``, and on a user's data
``train``, ``score`` and ``evaluate`` (`context_denoising.verbs`)."""

from __future__ import annotations

from typing import Any

from context_denoising.experiments import ESTIMATE_S
from shared_core.cli import LazyScales, ReproduceArgs, make_main, reproduce_command
from shared_core.verbs import Slots, evaluate_command, train_command, verb_command


def _scales() -> dict[str, Any]:
    from context_denoising.experiments.retrieval import SCALES
    from context_denoising.experiments.smollm import SmallConfig

    return {**SCALES, "small": SmallConfig()}


def _reproduce(args: ReproduceArgs) -> int:
    if args.scale == "small":
        from context_denoising.experiments.smollm import reproduce_small

        return reproduce_small(args)
    from context_denoising.experiments.reproduce import reproduce

    return reproduce(args)


def _lazy(name: str) -> Any:
    from context_denoising import verbs  # no torch: verbs imports it inside the verbs

    return getattr(verbs, name)


main = make_main(
    "context-denoising",
    [
        reproduce_command(
            _reproduce,
            LazyScales(_scales),
            help=(
                "Train a 2-layer d=64 Llama on generated key-value retrieval with plain SFT, CDT "
                "(the paper's beta = 5 and a 200x step) and equal-FLOPs SFT and score accuracy, "
                "needle attention, the attention IG score, manual denoising and the noise "
                f"detector: micro ~{ESTIMATE_S['micro']:.0f} s, tiny ~{ESTIMATE_S['tiny'] / 60:.1f} "
                "min of CPU (2 seeds, one thread); small fine-tunes SmolLM2-135M with CDT+LoRA "
                f"on Shakespeare-haystack prompts (~{ESTIMATE_S['small'] / 60:.0f} CPU-min)."
            ),
        ),
        train_command(
            "context_denoising.verbs:train",
            "fine-tune a causal LM (--model DIR|smollm2) on JSONL records with the CDT step "
            "(CDTTrainer; --preset, --set beta=...), or --sft for the plain baseline",
            config="context_denoising.cdt:CDTConfig",
            options=lambda p: _lazy("train_options")(p),
        ),
        verb_command(
            "score",
            "context_denoising.verbs:score",
            "per-token noise scores and CDT's noise mask of each document: a heat-map "
            "(--out scores.html|.png) and scores.jsonl beside it",
            Slots(data="required", checkpoint="optional", out="required"),
            options=lambda p: _lazy("score_options")(p),
        ),
        evaluate_command(
            "context_denoising.verbs:evaluate",
            "retrieval accuracy (the answer in the greedy generation), teacher-forced exact "
            "match and answer log-probability on JSONL prompt/completion records",
            options=lambda p: _lazy("evaluate_options")(p),
            many=False,
        ),
    ],
    description="Context Denoising Training (ICLR 2026): the gradient noise score and the CDT step.",
)

if __name__ == "__main__":
    raise SystemExit(main())
