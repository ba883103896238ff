"""The ``nextquill`` console script: ``nextquill reproduce [--scale micro|tiny|small|paper]``."""

from __future__ import annotations

from shared_core.cli import lazy_reproduce_command, make_main

main = make_main(
    "nextquill",
    [
        lazy_reproduce_command(
            "nextquill.experiments.planted",
            help="Planted-preference users, tiny Llama: ContextSFT vs L_n only vs L_p only vs "
            "NextQuill (paper and code forms), 3 seeds; micro takes seconds, tiny about 4 "
            "minutes, small adds SmolLM2-135M + LoRA on Shakespeare characters (about an hour), "
            "paper longer (CPU, 1 thread).",
        )
    ],
    description="NextQuill (ICLR 2026): causal preference alignment for LLM personalisation.",
)

if __name__ == "__main__":
    raise SystemExit(main())
