"""The sizes of the reproduce experiment: `SCALES` maps micro / tiny / small / paper to a `Scale`.

A `Scale` is a list of `Arm`s (task x corruption x rates x widths x token budgets, one training
run per combination) plus the fitting budget. The first arm is the headline one (Markov source,
token substitution): it gets the random and the unseen-Q held-out splits, the bootstrap CIs and
the effective-data table; the other arms get the random split only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports SCALES for --help: keep numpy, scipy and torch out of it
    import numpy as np

    from quality_scaling.grid import Cell
    from quality_scaling.laws import ScalingLaw

__all__ = ["GRIDS", "SCALES", "Arm", "Scale", "start_grid"]


@dataclass(frozen=True)
class Arm:
    """One block of the grid: a task and a corruption over rates x widths x token budgets."""

    task: str
    corruption: str
    rates: tuple[float, ...]
    d_models: tuple[int, ...]
    tokens: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.task}/{self.corruption}"

    def cells(self, seed: int) -> list[Cell]:
        from quality_scaling.grid import make_cells

        return make_cells(self.task, self.corruption, self.rates, self.d_models, self.tokens, seed)


GRIDS = ("full", "sub")
"""Start grids: ``full`` is Epoch AI's (4,500 / 22,500 starts), ``sub`` 3 values per axis
(243 / 729 starts)."""


def start_grid(kind: str, law: ScalingLaw) -> np.ndarray:
    """The initialisation grid `kind` (`GRIDS`) of `law`."""
    from quality_scaling.fit import init_grid

    if kind == "full":
        return init_grid(law)
    if kind == "sub":
        three = (0.0, 1.0, 2.0)
        return init_grid(
            law, a=(0, 10, 20), b=(0, 10, 20), e=(-1, 0, 1), alpha=three, beta=three, gamma=three
        )
    raise ValueError(f"grid: expected one of {GRIDS}, got {kind!r}")


@dataclass(frozen=True)
class Scale:
    """The arms of a scale and how hard the fits search."""

    arms: tuple[Arm, ...]
    notes: str
    n_bootstrap: int = 200  # resamples for the CIs of the all-cells headline fit
    headline_grid: str = "full"  # starts of the headline random-split and CI fits
    secondary_grid: str = "sub"  # starts of the unseen-Q split, the other arms and the clean fit
    held_out_frac: float = 0.25  # random split: fraction of cells held out
    unseen_rate: float = 0.2  # unseen-Q split: the headline corruption rate held out

    def __post_init__(self) -> None:
        if not self.arms:
            raise ValueError("arms: expected at least one arm (the first is the headline)")
        for name in ("headline_grid", "secondary_grid"):
            if getattr(self, name) not in GRIDS:
                raise ValueError(f"{name}: expected one of {GRIDS}, got {getattr(self, name)!r}")
        head = self.arms[0]
        if (head.task, head.corruption) != ("markov", "substitute"):
            raise ValueError(f"arms[0]: expected the markov/substitute headline, got {head.name}")
        if self.unseen_rate not in head.rates or len(head.rates) < 3:
            raise ValueError(
                f"unseen_rate: expected one of the headline rates {head.rates} (three or more, "
                f"so two Q values remain for the fit), got {self.unseen_rate}"
            )
        if not 0 < self.held_out_frac < 1:
            raise ValueError(f"held_out_frac: expected a value in (0, 1), got {self.held_out_frac}")
        if not isinstance(self.n_bootstrap, int) or self.n_bootstrap < 1:
            raise ValueError(f"n_bootstrap: expected a positive int, got {self.n_bootstrap!r}")


def _powers(lo: int, hi: int) -> tuple[int, ...]:
    return tuple(2**k for k in range(lo, hi))


_SUB = (0.0, 0.1, 0.2, 0.3)
SCALES: dict[str, Scale] = {
    "micro": Scale(
        arms=(
            Arm("markov", "substitute", (0.0, 0.1, 0.2), (4, 8), (256, 512, 1024)),
            Arm("markov", "shuffle", (0.0, 0.25, 0.5), (4, 8), (256, 512)),
        ),
        notes="30 runs of a few steps, sub-grid fits: seconds; checks the pipeline, not the law",
        n_bootstrap=20,
        headline_grid="sub",
    ),
    "tiny": Scale(
        arms=(
            Arm("markov", "substitute", _SUB, (4, 8, 16, 32), (8192, 16384, 32768, 65536)),
            Arm("markov", "shuffle", (0.0, 0.25, 0.5), (4, 8, 16), (8192, 16384, 32768)),
            Arm("markov", "duplicate", (0.0, 0.25, 0.5), (4, 8, 16), (8192, 16384, 32768)),
            Arm("shakespeare", "substitute", (0.0, 0.15, 0.3), (8, 16, 32), (8192, 16384, 32768)),
            Arm("seq2seq", "substitute", (0.0, 0.15, 0.3), (8, 16, 32), (8192, 16384, 32768)),
        ),
        notes="172 runs, 2 CPU cores, a few minutes",
    ),
    "small": Scale(
        arms=(
            Arm("markov", "substitute", _SUB, (8, 16, 32, 64, 128), _powers(14, 20)),
            Arm("markov", "shuffle", (0.0, 0.2, 0.4, 0.6), (8, 16, 32, 64), _powers(14, 18)),
            Arm("markov", "duplicate", (0.0, 0.2, 0.4, 0.6), (8, 16, 32, 64), _powers(14, 18)),
            Arm("shakespeare", "substitute", _SUB, (16, 32, 64), _powers(14, 19)),
            Arm("seq2seq", "substitute", _SUB, (16, 32, 64), _powers(14, 19)),
        ),
        notes="368 runs, D up to 512k tokens on the headline arm: about 25 CPU-minutes",
        n_bootstrap=1000,
        secondary_grid="full",
    ),
    "paper": Scale(
        arms=(
            Arm(
                "markov",
                "substitute",
                (0.0, 0.05, 0.1, 0.2, 0.3, 0.4),
                (16, 32, 64, 128, 256),
                _powers(15, 23),
            ),
            Arm("markov", "shuffle", (0.0, 0.1, 0.2, 0.4, 0.6), (16, 32, 64, 128), _powers(15, 22)),
            Arm(
                "markov", "duplicate", (0.0, 0.1, 0.2, 0.4, 0.6), (16, 32, 64, 128), _powers(15, 22)
            ),
            Arm(
                "shakespeare",
                "substitute",
                (0.0, 0.05, 0.1, 0.2, 0.3, 0.4),
                (32, 64, 128, 256),
                _powers(15, 23),
            ),
            Arm(
                "seq2seq",
                "substitute",
                (0.0, 0.05, 0.1, 0.2, 0.3, 0.4),
                (32, 64, 128, 256),
                _powers(15, 23),
            ),
        ),
        notes="GPUs or 16+ CPU workers; hours",
        n_bootstrap=4000,
        secondary_grid="full",
    ),
}
