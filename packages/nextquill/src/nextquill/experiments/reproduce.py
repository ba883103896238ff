"""``nextquill reproduce``: the planted-preference arms (`nextquill.experiments.planted`), or
with ``--ablate`` NextQuill vs L_n only under one change each (`nextquill.experiments.ablation`),
on the same scales. Both experiments build on `planted`; neither imports the other's caller.
"""

from __future__ import annotations

from typing import Any

from nextquill.experiments.planted import SCALES, Config
from shared_core.cli import ReproduceArgs

__all__ = ["SCALES", "Config", "reproduce"]


def reproduce(args: ReproduceArgs) -> Any:
    """`planted.reproduce`, or `ablation.reproduce` when ``--ablate`` was given."""
    if args.extra.get("ablate"):
        from nextquill.experiments import ablation

        return ablation.reproduce(args)
    from nextquill.experiments import planted

    return planted.reproduce(args)
