"""The verbs a user runs on their own data: ``train``, ``sample``/``generate``,
``predict``/``score`` and ``evaluate``, with the same flags in every package.

A package's ``cli.py`` lists them beside ``reproduce`` (the anatomy in docs/contributing.md)::

    main = make_main("meld-diffusion", [
        lazy_reproduce_command("meld_diffusion.experiments.reproduce", HELP),
        train_command("meld_diffusion.verbs:train", "train MELD on a SMILES file",
                      config="meld_diffusion.verbs:TrainSettings"),
        sample_command("meld_diffusion.verbs:sample", "sample molecules from a checkpoint"),
    ])

Flags (each verb takes those its `Slots` ask for; names and meanings are the same everywhere):

- ``--data PATH`` the user's file (repeatable where a method takes several), ``--checkpoint DIR``
  a folder `train` wrote (`shared_core.hub`), ``--out PATH`` what the verb writes (for `train`,
  the checkpoint folder), ``--skip-invalid`` skip and count malformed records instead of failing;
- ``--config FILE`` (JSON/TOML) and ``--set key=value`` override the package's config
  dataclass (`shared_core.config`); ``--device``, ``--threads``, ``--seed``, ``--name``,
  ``--runs DIR`` (run reports: metrics.json, report.md, plots), and for `train` ``--resume``.

The package's function receives a `VerbArgs`. It runs inside `limit_threads(--threads)` and a
`Heartbeat` (use `shared_core.progress.plan` / `phase`); a `UsageError` or a missing file is one
``error:`` line with exit status 2. `run` and `config` may be ``"module:attribute"`` strings,
imported only when the verb runs, so ``--help`` imports no framework.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from shared_core.cli import Command, UsageError, add_run_flags, run_inside

Slot = Literal["required", "optional", "none"]


@dataclass(frozen=True)
class Slots:
    """Which of ``--data`` / ``--checkpoint`` / ``--out`` a verb takes; `many`: --data repeats."""

    data: Slot = "required"
    checkpoint: Slot = "optional"
    out: Slot = "optional"
    many: bool = False
    resume: bool = False


@dataclass(frozen=True)
class VerbArgs:
    """What every verb's function receives: the common flags, parsed and checked."""

    command: str
    data: tuple[Path, ...] = ()
    checkpoint: Path | None = None
    out: Path | None = None
    config: Any = None
    """The package's config dataclass with ``--config`` and ``--set`` applied (None if none)."""
    device: str = "auto"
    seed: int = 0
    threads: int = 1
    name: str = ""
    resume: bool = False
    skip_invalid: bool = False
    runs: Path = Path("runs")
    extra: Mapping[str, Any] = field(default_factory=dict)
    """The package's own flags (added with `options`), by ``dest``."""

    @property
    def data_path(self) -> Path:
        """The one ``--data`` file (a `UsageError` when none or several were given)."""
        if len(self.data) != 1:
            raise UsageError(f"--data: {self.command} expects one file, got {len(self.data)}")
        return self.data[0]


def _resolve(spec: Any) -> Any:
    """``"module:attribute"`` imported now; anything else as it is."""
    if isinstance(spec, str):
        module, sep, attribute = spec.partition(":")
        if not sep:
            raise ValueError(f"spec: expected 'module:attribute', got {spec!r}")
        return getattr(importlib.import_module(module), attribute)
    return spec


def _default_config(spec: Any) -> Any:
    """The config the overrides apply to: a class is instantiated with its defaults."""
    value = _resolve(spec)
    return value() if callable(value) else value


_OWN = frozenset(
    {"data", "checkpoint", "out", "config", "set", "device", "seed", "threads", "name",
     "resume", "skip_invalid", "runs", "command", "_run"}
)  # fmt: skip


def verb_command(
    name: str,
    run: Callable[[VerbArgs], Any] | str,
    help: str,
    slots: Slots = Slots(),
    config: Any = None,
    options: Callable[[argparse.ArgumentParser], None] | None = None,
) -> Command:
    """A verb ``name`` that calls ``run(VerbArgs)`` with the common flags `slots` asks for.

    `config` (an instance, a class, or ``"module:Class"``) is the dataclass ``--config`` and
    ``--set`` override; without one those flags are absent. `options(parser)` adds the
    package's own flags; they reach `run` as ``args.extra[dest]``.
    """
    if not name or not name.replace("-", "").isalnum():
        raise ValueError(f"name: expected a word such as 'train', got {name!r}")

    def configure(p: argparse.ArgumentParser) -> None:
        if slots.data != "none":
            p.add_argument(
                "--data", type=Path, action="append" if slots.many else "store",
                required=slots.data == "required", metavar="PATH",
                help="input file" + (" (repeat for several)" if slots.many else ""),
            )  # fmt: skip
            p.add_argument(
                "--skip-invalid", action="store_true",
                help="skip malformed records (counted, printed and written to the metrics) "
                "instead of stopping at the first",
            )  # fmt: skip
        if slots.checkpoint != "none":
            p.add_argument(
                "--checkpoint", type=Path, required=slots.checkpoint == "required",
                metavar="DIR", help="a folder written by `train`",
            )  # fmt: skip
        if slots.out != "none":
            p.add_argument(
                "--out", type=Path, required=slots.out == "required", metavar="PATH",
                help="where to write the result" + (" (the checkpoint folder)"
                                                    if name == "train" else ""),
            )  # fmt: skip
        if config is not None:
            p.add_argument("--config", type=Path, metavar="FILE",
                           help="JSON or TOML file of config overrides")  # fmt: skip
            p.add_argument(
                "--set", action="append", default=[], metavar="KEY=VALUE",
                help="override one config value (repeatable; a.b=1 reaches a nested one)",
            )  # fmt: skip
        if slots.resume:
            p.add_argument("--resume", action="store_true",
                           help="continue from the last checkpoint in --out")  # fmt: skip
        add_run_flags(p)
        p.add_argument("--runs", type=Path, default=Path("runs"), metavar="DIR",
                       help="root folder for run reports (metrics, report, plots)")  # fmt: skip
        if options is not None:
            options(p)

    def call(ns: argparse.Namespace) -> Any:
        data = getattr(ns, "data", None)
        paths = tuple(data) if isinstance(data, list) else (() if data is None else (data,))
        for path in paths:
            if not path.exists():
                raise FileNotFoundError(f"--data: no file or folder {path}")
        checkpoint = getattr(ns, "checkpoint", None)
        if checkpoint is not None and not checkpoint.is_dir():
            raise FileNotFoundError(f"--checkpoint: no folder {checkpoint}")
        out, resume = getattr(ns, "out", None), getattr(ns, "resume", False)
        if slots.resume and out is not None and not resume and _non_empty(out):
            raise UsageError(
                f"--out: {out} exists and is not empty; pass --resume to continue that run, "
                "or name a new folder"
            )
        cfg = None
        if config is not None:
            from shared_core.config import apply_overrides

            cfg = apply_overrides(_default_config(config), ns.config, ns.set)
        args = VerbArgs(
            command=name, data=paths, checkpoint=checkpoint, out=out, config=cfg,
            device=ns.device, seed=ns.seed, threads=ns.threads, name=ns.name or "",
            resume=resume, skip_invalid=getattr(ns, "skip_invalid", False), runs=ns.runs,
            extra={k: v for k, v in vars(ns).items() if k not in _OWN},
        )  # fmt: skip
        return run_inside(
            name,
            ns,
            lambda: _resolve(run)(args),
            command=name,
        )

    return Command(name, help, call, configure)


def _non_empty(path: Path) -> bool:
    return path.is_file() or (path.is_dir() and any(path.iterdir()))


def train_command(
    run: Callable[[VerbArgs], Any] | str,
    help: str,
    config: Any = None,
    options: Callable[[argparse.ArgumentParser], None] | None = None,
    many: bool = False,
) -> Command:
    """``train --data PATH --out DIR [--checkpoint DIR] [--resume]``: writes a checkpoint
    folder at ``--out`` (refusing a non-empty one unless ``--resume``); ``--checkpoint``
    starts from a trained model."""
    slots = Slots(data="required", checkpoint="optional", out="required", many=many, resume=True)
    return verb_command("train", run, help, slots, config, options)


def sample_command(
    run: Callable[[VerbArgs], Any] | str,
    help: str,
    name: str = "sample",
    config: Any = None,
    options: Callable[[argparse.ArgumentParser], None] | None = None,
) -> Command:
    """``sample`` (or ``generate``) ``--checkpoint DIR --out PATH [--data PATH]``."""
    slots = Slots(data="optional", checkpoint="required", out="required")
    return verb_command(name, run, help, slots, config, options)


def predict_command(
    run: Callable[[VerbArgs], Any] | str,
    help: str,
    name: str = "predict",
    config: Any = None,
    options: Callable[[argparse.ArgumentParser], None] | None = None,
) -> Command:
    """``predict`` (or ``score``) ``--checkpoint DIR --data PATH [--out PATH]``."""
    slots = Slots(data="required", checkpoint="required", out="optional")
    return verb_command(name, run, help, slots, config, options)


def evaluate_command(
    run: Callable[[VerbArgs], Any] | str,
    help: str,
    config: Any = None,
    options: Callable[[argparse.ArgumentParser], None] | None = None,
    many: bool = True,
) -> Command:
    """``evaluate --data PATH [--data PATH ...] [--checkpoint DIR] [--out PATH]``."""
    slots = Slots(data="required", checkpoint="optional", out="optional", many=many)
    return verb_command("evaluate", run, help, slots, config, options)


def record_checkpoint(run: Any, folder: str | Path) -> None:
    """Link a run report (`shared_core.report.Run`) to the checkpoint folder its `train` wrote:
    logged as the ``checkpoint`` metric (absolute path), listed in its report."""
    run.log(checkpoint=str(Path(folder).resolve()))
