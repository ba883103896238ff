"""Quality-aware scaling laws: L(N, D, Q) = E + A/N^alpha + B/(D^beta Q^gamma) (arXiv:2510.03313).

The names below are imported on first use, so ``import quality_scaling`` (and the CLI's
``--help``) does not pay for scipy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

if TYPE_CHECKING:
    from quality_scaling.fit import (
        FitResult,
        bootstrap,
        fit_chinchilla,
        fit_law,
        holdout_error,
        init_grid,
    )
    from quality_scaling.laws import (
        CHINCHILLA,
        QUALITY,
        QUALITY_FIXED_N,
        ScalingData,
        ScalingLaw,
        get_law,
    )
    from quality_scaling.tables import EPOCH_DROPPED_RUNS, read_epoch_chinchilla, read_runs_csv

_SOURCES = {
    "FitResult": "fit",
    "bootstrap": "fit",
    "fit_chinchilla": "fit",
    "fit_law": "fit",
    "holdout_error": "fit",
    "init_grid": "fit",
    "CHINCHILLA": "laws",
    "QUALITY": "laws",
    "QUALITY_FIXED_N": "laws",
    "ScalingData": "laws",
    "ScalingLaw": "laws",
    "get_law": "laws",
    "EPOCH_DROPPED_RUNS": "tables",
    "read_epoch_chinchilla": "tables",
    "read_runs_csv": "tables",
}

__all__ = [
    "CHINCHILLA",
    "EPOCH_DROPPED_RUNS",
    "QUALITY",
    "QUALITY_FIXED_N",
    "FitResult",
    "ScalingData",
    "ScalingLaw",
    "bootstrap",
    "fit_chinchilla",
    "fit_law",
    "get_law",
    "holdout_error",
    "init_grid",
    "read_epoch_chinchilla",
    "read_runs_csv",
]


__getattr__, __dir__ = lazy_exports(__name__, _SOURCES, distribution="quality-scaling")
