"""The common shape of every package's console script.

``<package> reproduce [--scale tiny|small|paper] [--device auto] [--seed 0] [--out runs]``,
``<package> --version``, and any extra sub-commands. Bad input prints one ``error:`` line
and exits with status 2; no traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

SCALES = ("tiny", "small", "paper")

USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, FileNotFoundError, KeyError)
"""Exceptions that mean bad input: reported as one line, exit status 2."""


@dataclass(frozen=True)
class ReproduceArgs:
    """The options every ``reproduce`` command takes."""

    scale: str = "tiny"
    device: str = "auto"
    seed: int = 0
    out: Path = Path("runs")


@dataclass(frozen=True)
class Command:
    """A sub-command: `configure` adds its arguments, `run` gets the parsed namespace."""

    name: str
    help: str
    run: Callable[[argparse.Namespace], Any]
    configure: Callable[[argparse.ArgumentParser], None] | None = None


def reproduce_command(
    run: Callable[[ReproduceArgs], Any],
    help: str = "run the paper's headline experiment at a small scale",
    scales: Sequence[str] = SCALES,
) -> Command:
    """The standard ``reproduce`` sub-command around ``run(ReproduceArgs)``."""

    def configure(p: argparse.ArgumentParser) -> None:
        p.add_argument("--scale", choices=list(scales), default=scales[0], help="experiment size")
        p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
        p.add_argument("--seed", type=int, default=0, help="random seed")
        p.add_argument("--out", type=Path, default=Path("runs"), help="root folder for run reports")

    def call(ns: argparse.Namespace) -> Any:
        return run(ReproduceArgs(scale=ns.scale, device=ns.device, seed=ns.seed, out=ns.out))

    return Command("reproduce", help, call, configure)


def make_main(
    prog: str, version: str, commands: Sequence[Command], description: str = ""
) -> Callable[[Sequence[str] | None], int]:
    """Build the ``main(argv) -> exit status`` function a console-script entry point names."""

    def main(argv: Sequence[str] | None = None) -> int:
        parser = argparse.ArgumentParser(prog=prog, description=description)
        parser.add_argument("--version", action="version", version=f"{prog} {version}")
        sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
        for c in commands:
            p = sub.add_parser(c.name, help=c.help, description=c.help)
            if c.configure is not None:
                c.configure(p)
            p.set_defaults(_run=c.run)
        ns = parser.parse_args(argv)
        try:
            result = ns._run(ns)
        except USER_ERRORS as e:
            msg = e.args[0] if isinstance(e, KeyError) and e.args else e
            print(f"{prog}: error: {msg}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"{prog}: interrupted", file=sys.stderr)
            return 130
        return result if isinstance(result, int) else 0

    return main


def progress(
    iterable: Iterable[T], desc: str = "", total: int | None = None, enabled: bool = True
) -> Iterable[T]:
    """A tqdm progress bar on stderr (pass ``enabled=is_main()`` under torchrun)."""
    from tqdm.auto import tqdm

    return tqdm(
        iterable, desc=desc, total=total, disable=not enabled, dynamic_ncols=True, leave=False
    )
