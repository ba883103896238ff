"""The ``crome`` console script: ``crome reproduce [--scale tiny|small|paper] [--llm-oracle]``."""

from __future__ import annotations

import argparse

from crome import __version__
from shared_core.cli import Command, ReproduceArgs, make_main, reproduce_command


def _run(ns: argparse.Namespace) -> int:
    from crome.experiments.controlled_world import run

    args = ReproduceArgs(scale=ns.scale, device=ns.device, seed=ns.seed, out=ns.out)
    run(args, llm_oracle=True if ns.llm_oracle else (False if ns.no_llm_oracle else None))
    return 0


def _configure(p: argparse.ArgumentParser) -> None:
    base = reproduce_command(lambda a: None)
    assert base.configure is not None
    base.configure(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--llm-oracle",
        action="store_true",
        help="also run the SmolLM2 oracle (default at small/paper)",
    )
    g.add_argument("--no-llm-oracle", action="store_true", help="skip the SmolLM2 oracle run")


main = make_main(
    "crome",
    __version__,
    [
        Command(
            "reproduce",
            "standard RM vs CROME RM in the controlled preference world",
            _run,
            _configure,
        )
    ],
    description="CROME: causally robust reward modeling (ICLR 2026).",
)
