"""A planted library with a known answer, for tests and for checking the search's behaviour.

Each framework traces a trade-off curve ``y = (q, 1 - q) * level`` over its grid ``x in 0..9``
(``q = x / 9`` bent by a concave exponent); framework ``good`` has the highest level, so it
strictly dominates the others. ``failing=True`` adds three frameworks whose every candidate
hangs, crashes the process or returns NaN (the sandbox must record them and go on), and one
that writes files (which must stay inside the sandbox's temporary directory).
"""

from __future__ import annotations

import os
import time

import numpy as np

from mathmo.tasks.base import Candidate, Framework, Task

_LEVELS = {"good": 1.0, "fair": 0.8, "poor": 0.65, "weak": 0.5, "bad": 0.4}


class PlantedTask(Task):
    subjective = False
    objectives = ("first", "second")

    def __init__(self, frameworks: tuple[str, ...] = tuple(_LEVELS), failing: bool = False) -> None:
        self.name = "planted"
        unknown = [n for n in frameworks if n not in _LEVELS]
        if unknown:
            raise ValueError(f"frameworks: expected names from {tuple(_LEVELS)}, got {unknown}")
        grid = {"x": tuple(range(10))}
        fws = [Framework(n, f"planted level {_LEVELS[n]}", grid) for n in frameworks]
        if failing:
            fws += [Framework(n, f"always {n}", grid) for n in ("hang", "crash", "nan", "writer")]
        self.frameworks = tuple(fws)

    def evaluate(self, candidate: Candidate) -> dict[str, float]:
        f, x = candidate.framework, candidate.get("x")
        if f == "hang":
            time.sleep(3600)
        if f == "crash":
            os._exit(3)
        if f == "nan":
            return {"first": float("nan"), "second": 0.5}
        if f == "writer":
            with open("written-by-candidate.txt", "w") as fh:
                fh.write("inside")
            return {"first": 0.1, "second": 0.1, "cwd_hash": float(hash(os.getcwd()) % 1000)}
        q = (x / 9.0) ** 0.7
        level = _LEVELS[f]
        return {"first": level * q, "second": level * (1.0 - q) ** 0.7}

    def normalise(self, raw: dict[str, float], subjective: float | None = None) -> np.ndarray:
        return np.array([raw["first"], raw["second"]])
