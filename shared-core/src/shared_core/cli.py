"""The common shape of every package's console script.

``<package> reproduce [--scale micro|tiny|small|paper] [--device auto] [--seed 0] [--threads 1]
[--out runs]``, ``<package> --version``, and any extra sub-commands.

- Scales: a package passes ``SCALES: dict[str, Config]`` (one config per scale) to
  `reproduce_command`; ``micro`` runs end to end in seconds (CI runs it), ``tiny`` shows the
  headline finding in minutes on 2 cores, ``small`` is the honest CPU run, ``paper`` the
  GPU-sized one.
- The run executes inside `shared_core.device.limit_threads(--threads)` and every `Run`
  records threads, device, seed and scale.
- Errors: a `UsageError` (bad arguments, found by the package's own checks), an `InputError`
  (a malformed file, from `shared_core.data`'s readers) or a missing
  file/optional dependency (`FileNotFoundError`) prints one ``error:`` line and exits 2;
  anything else keeps its traceback (it is a bug, or needs one to diagnose). An error or
  Ctrl-C marks the unfinished run folders failed.

Nothing here imports torch: ``--help`` stays fast when a package's ``cli.py`` imports its
experiments lazily, inside the ``run`` functions.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

# re-exported: the packages import them from here, beside the commands that run them
from shared_core.errors import InputError
from shared_core.progress import Heartbeat as Heartbeat
from shared_core.progress import phase as phase
from shared_core.progress import plan as plan
from shared_core.progress import progress as progress

T = TypeVar("T")

SCALES = ("micro", "tiny", "small", "paper")
DEFAULT_SCALE = "tiny"


class UsageError(InputError):
    """Bad input to a command: reported as one ``error:`` line with exit status 2."""


USER_ERRORS: tuple[type[BaseException], ...] = (InputError, FileNotFoundError)
"""Exceptions reported as one line (exit status 2); others keep their traceback."""


@dataclass(frozen=True)
class ReproduceArgs:
    """The options every ``reproduce`` command takes, and the chosen scale's config."""

    scale: str = DEFAULT_SCALE
    device: str = "auto"
    seed: int = 0
    threads: int = 1
    out: Path = Path("runs")
    config: Any = None
    name: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """The package's own flags (added with `reproduce_command`'s `options`), by ``dest``."""


@dataclass(frozen=True)
class Command:
    """A sub-command: `configure` adds its arguments, `run` gets the parsed namespace."""

    name: str
    help: str
    run: Callable[[argparse.Namespace], Any]
    configure: Callable[[argparse.ArgumentParser], None] | None = None


def device_arg(spec: str) -> str:
    """argparse type of ``--device``: ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (form only)."""
    s = spec.strip().lower()
    if s in ("auto", "cpu", "cuda") or (s.startswith("cuda:") and s[5:].isdigit()):
        return s
    raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda or cuda:N, got {spec!r}")


def positive_int(text: str) -> int:
    """argparse type of a count (``--threads``, ``--steps``): an int >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def nonneg_int(text: str) -> int:
    """argparse type of a seed or an optional count (``--seed``, ``--bootstrap``): an int >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {value}")
    return value


def reproduce_command(
    run: Callable[[ReproduceArgs], Any],
    scales: Mapping[str, Any],
    help: str,
    default: str = DEFAULT_SCALE,
    options: Callable[[argparse.ArgumentParser], None] | None = None,
) -> Command:
    """The standard ``reproduce`` sub-command around ``run(ReproduceArgs)``.

    `scales` maps each scale name (a subset of `SCALES`, in that order) to its config, which
    ``run`` receives as ``args.config``. `help` is one sentence: what it runs and how long it
    takes at each scale. `options(parser)` adds the package's own flags; their parsed values
    reach ``run`` as ``args.extra[dest]``.
    """
    unknown = [s for s in scales if s not in SCALES]
    if unknown or not scales:
        raise ValueError(f"scales: expected names among {SCALES}, got {list(scales)}")
    if default not in scales:
        raise ValueError(f"default: {default!r} is not one of the scales {list(scales)}")
    names = [s for s in SCALES if s in scales]

    def configure(p: argparse.ArgumentParser) -> None:
        p.add_argument("--scale", choices=names, default=default, help="experiment size")
        add_run_flags(p)
        p.add_argument("--out", type=Path, default=Path("runs"), help="root folder for run reports")
        if options is not None:
            options(p)

    def call(ns: argparse.Namespace) -> Any:
        args = ReproduceArgs(
            scale=ns.scale, device=ns.device, seed=ns.seed, threads=ns.threads, out=ns.out,
            config=scales[ns.scale], name=ns.name or "",
            extra={k: v for k, v in vars(ns).items() if k not in _STANDARD_DESTS},
        )  # fmt: skip
        return run_inside(
            f"reproduce --scale {args.scale}", ns, lambda: run(args), scale=args.scale
        )

    return Command("reproduce", help, call, configure)


def add_run_flags(p: argparse.ArgumentParser) -> None:
    """``--device``, ``--seed``, ``--threads`` and ``--name``: the flags of every command."""
    p.add_argument("--device", type=device_arg, default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--seed", type=nonneg_int, default=0, help="random seed")
    p.add_argument(
        "--threads", type=positive_int, default=1,
        help="CPU threads for torch/BLAS/OpenMP (1 is fastest on a busy machine)",
    )  # fmt: skip
    p.add_argument(
        "--name", type=_run_name, default=None,
        help="a label appended to the run folder: <out>/<package>/<timestamp>-<scale>-<name>",
    )  # fmt: skip


def run_inside(label: str, ns: argparse.Namespace, body: Callable[[], T], **context: Any) -> T:
    """Run `body` as a command does: ``--device`` checked, the run context set (device, seed,
    threads, name and `context`), inside `limit_threads(--threads)` and a `Heartbeat`."""
    from shared_core.device import limit_threads
    from shared_core.report import set_run_context

    if ns.device not in ("auto", "cpu"):
        from shared_core.device import resolve_device

        try:
            resolve_device(ns.device)
        except ValueError as e:
            raise UsageError(str(e)) from None
    named = {"name": ns.name} if ns.name else {}
    set_run_context(device=ns.device, seed=ns.seed, threads=ns.threads, **context, **named)
    with limit_threads(ns.threads), Heartbeat(label):
        return body()


_STANDARD_DESTS = frozenset(
    {"scale", "device", "seed", "threads", "out", "name", "command", "_run"}
)  # what `reproduce_command` and `make_main` put in the namespace themselves


def _run_name(text: str) -> str:
    """argparse type of ``--name``: letters, digits, ``.``, ``_`` and ``-`` (a folder name)."""
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", text):
        raise argparse.ArgumentTypeError(
            f"expected 1-64 letters, digits, '.', '_' or '-', got {text!r}"
        )
    return text


class LazyScales(dict[str, Any]):
    """A package's ``SCALES`` whose names are known up front (for ``--help``) and whose
    configs come from ``load()`` on first use, so building the CLI imports no framework.

    `load` returns the mapping of every name in `names` to its config (it may import torch).
    """

    def __init__(self, load: Callable[[], Mapping[str, Any]], names: Sequence[str] = SCALES):
        super().__init__(dict.fromkeys(names))
        self._load = load

    def __getitem__(self, scale: str) -> Any:
        if scale not in self:
            raise KeyError(scale)
        return self._load()[scale]


def lazy_reproduce_command(
    module: str,
    help: str,
    scales: Sequence[str] = SCALES,
    default: str = DEFAULT_SCALE,
    options: Callable[[argparse.ArgumentParser], None] | None = None,
) -> Command:
    """`reproduce_command` for an experiments module that is imported only when the command runs.

    `module` (e.g. ``"mesa_layer.experiments.reproduce"``) defines ``SCALES: dict[str, Config]``
    and ``reproduce(args: ReproduceArgs)``; importing it may pull in torch, so ``--help`` never
    does. `scales` are the names it defines.
    """
    import importlib

    lazy = LazyScales(lambda: importlib.import_module(module).SCALES, scales)

    def run(args: ReproduceArgs) -> Any:
        return importlib.import_module(module).reproduce(args)

    return reproduce_command(run, lazy, help, default, options)


class Main(Protocol):
    """A console-script entry point: ``main(argv=None) -> exit status``."""

    def __call__(self, argv: Sequence[str] | None = None) -> int: ...


def make_main(
    prog: str, commands: Sequence[Command], description: str = "", version: str | None = None
) -> Main:
    """Build the ``main(argv) -> exit status`` function a console-script entry point names.

    The version is read from the installed distribution `prog` (pyproject is its only home)
    unless `version` is given.
    """

    def main(argv: Sequence[str] | None = None) -> int:
        from shared_core.report import fail_open_runs

        parser = argparse.ArgumentParser(prog=prog, description=description)
        parser.add_argument(
            "--version", action="version", version=f"{prog} {_version(prog, version)}"
        )
        sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
        for c in commands:
            p = sub.add_parser(
                c.name, help=c.help, description=c.help,
                formatter_class=argparse.ArgumentDefaultsHelpFormatter,
            )  # fmt: skip
            if c.configure is not None:
                c.configure(p)
            p.set_defaults(_run=c.run)
        ns = parser.parse_args(argv)
        try:
            result = ns._run(ns)
        except USER_ERRORS as e:
            fail_open_runs(f"{type(e).__name__}: {e}")
            print(f"{prog}: error: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            fail_open_runs("interrupted")
            print(f"{prog}: interrupted", file=sys.stderr)
            return 130
        except BaseException as e:
            fail_open_runs(f"{type(e).__name__}: {e}")
            raise
        return result if isinstance(result, int) else 0

    return main


def _version(prog: str, given: str | None) -> str:
    if given is not None:
        return given
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(prog)
    except PackageNotFoundError:
        return "unknown (not installed)"
