"""What a modelling task is to the search: frameworks with hyper-parameter grids, an evaluator
that runs one candidate and returns raw measurements, and the transform of those measurements
to MATHMO's normalised objective space (``[0, 1]^k``, higher is better, reference point 0).

A candidate is the paper's ``(m, a)`` inside framework ``f``: one point of the framework's grid
(the model's structural choices and the algorithm's settings together).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Framework:
    """A modelling framework ``f``: a family with a grid of settings ``(m, a)``.

    The grid is the library a search starts from. A key whose values are all numbers is
    continuous: a candidate may take any value between the grid's smallest and largest (an
    integer if every grid value is one), which is how `mathmo.operators` mutates models off
    the grid; other keys are categorical.
    """

    name: str
    description: str
    grid: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key, values in self.grid.items():
            if not values:
                raise ValueError(f"grid[{key!r}]: expected at least one value, got {values!r}")
            if self.is_numeric(key) and any(a >= b for a, b in itertools.pairwise(values)):
                raise ValueError(
                    f"grid[{key!r}]: expected numeric values in increasing order, got {values!r}"
                )

    def size(self) -> int:
        """The number of grid points (the open space around them is infinite)."""
        return math.prod(len(v) for v in self.grid.values())

    def is_numeric(self, key: str) -> bool:
        return all(isinstance(v, int | float) and not isinstance(v, bool) for v in self.grid[key])

    def position(self, key: str, value: Any) -> float:
        """``value``'s position on the key's grid in index units (0 .. len - 1): the index of a
        grid value, linearly interpolated between neighbouring grid values for a numeric one."""
        values = self.grid[key]
        if value in values:
            return float(values.index(value))
        if not self.is_numeric(key):
            raise ValueError(f"{key}: expected one of {values}, got {value!r}")
        if not values[0] <= float(value) <= values[-1]:
            raise ValueError(
                f"{key}: expected a value in [{values[0]}, {values[-1]}], got {value!r}"
            )
        return float(np.interp(float(value), values, np.arange(len(values))))

    def value_at(self, key: str, position: float) -> Any:
        """Inverse of `position` for a numeric key (rounded for an all-integer grid)."""
        values = self.grid[key]
        u = float(np.clip(position, 0, len(values) - 1))
        v = float(np.interp(u, np.arange(len(values)), values))
        return round(v) if all(isinstance(x, int) for x in values) else v


@dataclass(frozen=True)
class Candidate:
    """One concrete model + algorithm: a framework name and one value per grid key."""

    framework: str
    params: tuple[tuple[str, Any], ...] = ()

    @staticmethod
    def of(framework: str, **params: Any) -> Candidate:
        return Candidate(framework, tuple(sorted(params.items())))

    def get(self, key: str) -> Any:
        return dict(self.params)[key]

    def label(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.framework}({inner})"


@dataclass(frozen=True)
class ModelCard:
    """What a judge of a subjective objective sees: a text and two structural facts."""

    description: str
    n_params: int
    mechanistic: bool


class Task:
    """Base class of a modelling task. Subclasses set the class attributes and implement
    `evaluate` (runs in the sandbox, returns raw numbers) and `normalise`.

    ``subjective`` tasks have one objective scored by MOSE (`mathmo.mose`): `card` describes a
    fitted candidate to the judge, `references` are the 3 fixed reference models.
    """

    name: str = "task"
    objectives: tuple[str, ...] = ()
    frameworks: tuple[Framework, ...] = ()
    subjective: bool = False

    def framework(self, name: str) -> Framework:
        for f in self.frameworks:
            if f.name == name:
                return f
        raise ValueError(
            f"framework: expected one of {[f.name for f in self.frameworks]}, got {name!r}"
        )

    def evaluate(self, candidate: Candidate) -> dict[str, float]:
        raise NotImplementedError

    def normalise(self, raw: dict[str, float], subjective: float | None = None) -> np.ndarray:
        raise NotImplementedError

    def card(self, candidate: Candidate, raw: dict[str, float]) -> ModelCard:
        raise NotImplementedError(f"{self.name} has no subjective objective")

    def references(self) -> tuple[ModelCard, ...]:
        raise NotImplementedError(f"{self.name} has no subjective objective")

    def describe(self) -> str:
        """The problem statement an LLM operator is given."""
        return f"{self.name}: objectives {', '.join(self.objectives)} (all maximised after normalisation)"


def encode(framework: Framework, candidate: Candidate) -> np.ndarray:
    """A candidate's grid position scaled to ``[0, 1]`` per key (the surrogate's features;
    off-grid numeric values sit between their neighbouring grid values)."""
    out = []
    for key, values in framework.grid.items():
        pos = framework.position(key, candidate.get(key))
        out.append(pos / (len(values) - 1) if len(values) > 1 else 0.0)
    return np.asarray(out, dtype=np.float64)


def log_speed(cpu_s: float, fastest: float = 1e-5, slowest: float = 10.0) -> float:
    """Runtime -> ``[0, 1]``: 1 at ``fastest`` seconds or less, 0 at ``slowest``, linear in log10."""
    t = min(max(cpu_s, fastest), slowest)
    return float(1.0 - math.log10(t / fastest) / math.log10(slowest / fastest))


def gap_quality(value: float, best: float, worst_gap: float) -> float:
    """Cost -> ``[0, 1]``: 1 at the optimum (or bound) ``best``, 0 at ``worst_gap`` relative gap."""
    gap = value / best - 1.0
    return float(min(max(1.0 - gap / worst_gap, 0.0), 1.0))


def accuracy(rmse: float, scale: float) -> float:
    """Error -> ``(0, 1]``: ``1 / (1 + rmse / scale)`` (scale = the test series' spread)."""
    return float(1.0 / (1.0 + rmse / scale))


class ForecastTask(Task):
    """A time-series task whose objectives are (accuracy of the held-out RMSE, the subjective
    interpretability score), with `evaluate` returning ``rmse``, ``n_params`` and
    ``mechanistic``; subclasses set ``scale``, the RMSE that maps to accuracy 1/2 (the test series' spread)."""

    scale: float

    def card(self, candidate: Candidate, raw: dict[str, float]) -> ModelCard:
        return ModelCard(
            f"{self.framework(candidate.framework).description}: {candidate.label()}",
            int(raw["n_params"]),
            bool(raw["mechanistic"]),
        )

    def normalise(self, raw: dict[str, float], subjective: float | None = None) -> np.ndarray:
        assert subjective is not None
        return np.array([accuracy(raw["rmse"], self.scale), subjective])
