"""The ``context-denoising`` console script: ``context-denoising reproduce [--scale ...]``."""

from __future__ import annotations

from typing import Any

from shared_core.cli import LazyScales, ReproduceArgs, make_main, reproduce_command


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
                "detector: micro ~20 s, tiny ~4.5 min of CPU (2 seeds, one thread); "
                "small fine-tunes SmolLM2-135M with CDT+LoRA on Shakespeare-haystack prompts."
            ),
        )
    ],
    description="Context Denoising Training (ICLR 2026): the gradient noise score and the CDT step.",
)

if __name__ == "__main__":
    raise SystemExit(main())
