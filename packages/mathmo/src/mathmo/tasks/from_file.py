"""A user's task as a Python file, for ``mathmo solve --data task.py``.

The file defines, at module level, what `mathmo.tasks.base.Task` holds::

    objectives = ("accuracy", "simplicity")            # names, all maximised after normalise
    frameworks = (Framework("poly", "least-squares polynomial", {"degree": (1, 2, 3)}), ...)
    def evaluate(candidate: Candidate) -> dict[str, float]: ...   # raw measurements of one model
    def normalise(raw: dict[str, float]) -> list[float]: ...      # -> objectives in [0, 1]
    name = "my-task"                                   # optional (default: the file's stem)

`evaluate` runs in the sandbox (a forked child), so it may be slow, crash or hang without
stopping the search. Subjective objectives (MOSE) need reference models and a judge; a task
file has neither, so every objective is computed by `normalise`.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from mathmo.tasks.base import Candidate, Framework, Task
from shared_core.cli import UsageError

REQUIRED = ("objectives", "frameworks", "evaluate", "normalise")


class FileTask(Task):
    """A `Task` whose parts come from a user's module (see the module docstring)."""

    def __init__(
        self,
        name: str,
        objectives: tuple[str, ...],
        frameworks: tuple[Framework, ...],
        evaluate: Callable[[Candidate], dict[str, float]],
        normalise: Callable[[dict[str, float]], Any],
    ) -> None:
        self.name = name
        self.objectives = objectives
        self.frameworks = frameworks
        self._evaluate = evaluate
        self._normalise = normalise

    def evaluate(self, candidate: Candidate) -> dict[str, float]:
        return self._evaluate(candidate)

    def normalise(self, raw: dict[str, float], subjective: float | None = None) -> np.ndarray:
        return np.asarray(self._normalise(raw), dtype=np.float64)


def _import(path: Path) -> ModuleType:
    name = f"mathmo_task_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"--data: cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        del sys.modules[name]
        raise UsageError(
            f"--data: {path} is not valid Python: {err.msg} (line {err.lineno})"
        ) from err
    except Exception as err:
        del sys.modules[name]
        raise UsageError(f"--data: importing {path} raised {type(err).__name__}: {err}") from err
    return module


def load_task_file(path: str | Path) -> FileTask:
    """The task a Python file defines; a `UsageError` naming what is missing or malformed."""
    path = Path(path)
    if path.suffix != ".py":
        raise UsageError(
            f"--data: expected a Python task file (.py) defining {', '.join(REQUIRED)}, got {path}"
        )
    if not path.is_file():
        raise FileNotFoundError(f"--data: no file {path}")
    module = _import(path)
    missing = [a for a in REQUIRED if not hasattr(module, a)]
    if missing:
        raise UsageError(
            f"--data: {path} does not define {', '.join(missing)} (a task file defines "
            f"{', '.join(REQUIRED)}; see mathmo.tasks.from_file)"
        )
    objectives = module.objectives
    if (
        isinstance(objectives, str)
        or not isinstance(objectives, list | tuple)
        or len(objectives) < 1
        or not all(isinstance(o, str) for o in objectives)
    ):
        raise UsageError(
            f"--data: {path}: objectives: expected a tuple of names, got {objectives!r:.200}"
        )
    frameworks = module.frameworks
    if (
        not isinstance(frameworks, list | tuple)
        or not frameworks
        or not all(isinstance(f, Framework) for f in frameworks)
    ):
        raise UsageError(
            f"--data: {path}: frameworks: expected a tuple of mathmo.Framework, "
            f"got {frameworks!r:.200}"
        )
    for attr in ("evaluate", "normalise"):
        if not callable(getattr(module, attr)):
            raise UsageError(f"--data: {path}: {attr}: expected a function")
    return FileTask(
        str(getattr(module, "name", path.stem)),
        tuple(objectives),
        tuple(frameworks),
        module.evaluate,
        module.normalise,
    )
