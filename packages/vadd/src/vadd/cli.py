"""Console script ``vadd`` (the ``reproduce`` experiment is not written yet)."""

from __future__ import annotations

from shared_core.cli import ReproduceArgs, make_main, reproduce_command
from vadd import __version__


def _reproduce(args: ReproduceArgs) -> int:
    raise ValueError("reproduce: not implemented yet in vadd 0.1.0")


main = make_main("vadd", __version__, [reproduce_command(_reproduce)])
