"""The sizes of the reproduce experiment: `SCALES` maps micro / tiny / small / paper to a `Scale`.

A `Scale` is the paper's protocol (`Protocol`: one model size, sample-level corruption at the
paper's seven eta, three D, several seeds; the headline) plus a list of `Arm`s, our extensions
(task x corruption x rates x widths x token budgets, one training run per combination), and the
fitting budget. The first arm (Markov source, i.i.d. token substitution, several widths) gets the
random and the unseen-Q held-out splits, the bootstrap CIs, the known-floor fix and the
effective-data table; the other arms get the random split only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports SCALES for --help: keep numpy, scipy and torch out of it
    import numpy as np

    from quality_scaling.grid import Cell
    from quality_scaling.laws import ScalingLaw

__all__ = ["GRIDS", "PAPER_ETAS", "SCALES", "Arm", "Protocol", "Scale", "start_grid"]

PAPER_ETAS = (0.0, 0.10, 0.20, 0.25, 0.30, 0.40, 0.50)
"""Fractions of corrupted samples (paper note, "Key Experimental Results": eta = {0, 10, 20,
25, 30, 40, 50}%, Q = 1 - eta)."""


@dataclass(frozen=True)
class Protocol:
    """The paper's experiment: one model size (`d_model`), sample-level corruption (``samples``:
    a fraction eta of the training samples, each with half of its tokens replaced by random
    vocabulary tokens) at each of `etas`, each of the token budgets `tokens` (the paper: 3), each
    of `n_seeds` seeds (the paper: 3; 3 x 7 x 3 = 63 runs), on the Markov source."""

    d_model: int
    tokens: tuple[int, ...]
    n_seeds: int = 3
    etas: tuple[float, ...] = PAPER_ETAS

    def __post_init__(self) -> None:
        if not isinstance(self.etas, tuple) or not self.etas:
            raise ValueError(f"etas: expected a non-empty tuple of rates, got {self.etas!r}")
        for eta in self.etas:
            if not isinstance(eta, (int, float)) or isinstance(eta, bool) or not 0 <= eta < 1:
                raise ValueError(
                    f"etas: expected fractions of corrupted samples in [0, 1), got {eta!r}"
                )
        if 0.0 not in self.etas or len(set(self.etas)) < 2:
            raise ValueError(
                f"etas: expected 0 (the clean reference of Delta L) and at least one eta > 0, "
                f"got {self.etas}"
            )
        if len(set(self.tokens)) < 2:
            raise ValueError(
                f"tokens: expected at least two distinct token budgets D (beta is not "
                f"identifiable from one), got {self.tokens}"
            )
        if not isinstance(self.n_seeds, int) or isinstance(self.n_seeds, bool) or self.n_seeds < 1:
            raise ValueError(f"n_seeds: expected a positive int, got {self.n_seeds!r}")

    @property
    def name(self) -> str:
        return "markov/samples"

    def cells(self, seed: int) -> list[Cell]:
        """Every run: etas x tokens x seeds ``seed, seed + 1, ...``."""
        from quality_scaling.grid import Cell

        return [
            Cell("markov", "samples", float(eta), self.d_model, int(t), seed + s)
            for s in range(self.n_seeds)
            for eta in self.etas
            for t in self.tokens
        ]


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
    """The paper's protocol, the extension arms of a scale and how hard the fits search."""

    protocol: Protocol
    arms: tuple[Arm, ...]
    notes: str
    n_bootstrap: int = 200  # resamples for the CIs of the protocol fits and the substitution arm
    headline_grid: str = "full"  # starts of the protocol fits and the substitution arm's main fits
    secondary_grid: str = "sub"  # starts of the unseen-Q split, the other arms and the clean fit
    held_out_frac: float = 0.25  # random split: fraction of cells held out
    unseen_rate: float = 0.2  # unseen-Q split: the substitution arm's rate held out

    def __post_init__(self) -> None:
        if not self.arms:
            raise ValueError(
                "arms: expected at least one arm (the first is markov/substitute, the extension "
                "with held-out splits)"
            )
        for name in ("headline_grid", "secondary_grid"):
            if getattr(self, name) not in GRIDS:
                raise ValueError(f"{name}: expected one of {GRIDS}, got {getattr(self, name)!r}")
        head = self.arms[0]
        if (head.task, head.corruption) != ("markov", "substitute"):
            raise ValueError(f"arms[0]: expected the markov/substitute extension, got {head.name}")
        if self.unseen_rate not in head.rates or len(head.rates) < 3:
            raise ValueError(
                f"unseen_rate: expected one of the markov/substitute rates {head.rates} (three or more, "
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
        protocol=Protocol(8, (256, 512, 1024), n_seeds=1),
        arms=(
            Arm("markov", "substitute", (0.0, 0.1, 0.2), (4, 8), (256, 512, 1024)),
            Arm("markov", "shuffle", (0.0, 0.25, 0.5), (4, 8), (256, 512)),
        ),
        notes="21 + 30 runs of a few steps, sub-grid fits: seconds; checks the pipeline, not the law",
        n_bootstrap=20,
        headline_grid="sub",
    ),
    "tiny": Scale(
        protocol=Protocol(32, (8192, 32768, 131072), n_seeds=2),
        arms=(
            Arm("markov", "substitute", _SUB, (4, 8, 16, 32), (8192, 16384, 32768, 65536)),
            Arm("markov", "shuffle", (0.0, 0.25, 0.5), (4, 8, 16), (8192, 16384, 32768)),
            Arm("markov", "duplicate", (0.0, 0.25, 0.5), (4, 8, 16), (8192, 16384, 32768)),
            Arm("shakespeare", "substitute", (0.0, 0.15, 0.3), (8, 16, 32), (8192, 16384, 32768)),
            Arm("seq2seq", "substitute", (0.0, 0.15, 0.3), (8, 16, 32), (8192, 16384, 32768)),
        ),
        notes="42 protocol runs (2 seeds) + 172 extension runs, a few CPU-minutes",
    ),
    "small": Scale(
        protocol=Protocol(64, (131072, 524288, 2097152), n_seeds=3),
        arms=(Arm("markov", "substitute", _SUB, (8, 16, 32, 64), _powers(14, 19)),),
        notes=(
            "the paper's 63 runs (d_model 64, D = 128k / 512k / 2M) + 80 i.i.d.-substitution "
            "runs; the other extension arms run at tiny only: under 30 CPU-minutes"
        ),
        n_bootstrap=1000,
        secondary_grid="full",
    ),
    "paper": Scale(
        protocol=Protocol(128, (1048576, 4194304, 16777216), n_seeds=3),
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
