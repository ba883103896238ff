"""Quality-aware scaling laws: L(N, D, Q) = E + A/N^alpha + B/(D^beta Q^gamma) (arXiv:2510.03313)."""

from quality_scaling.fit import FitResult, bootstrap, fit_law, holdout_error, init_grid
from quality_scaling.laws import CHINCHILLA, QUALITY, ScalingData, ScalingLaw, get_law

__version__ = "0.1.0"

__all__ = [
    "CHINCHILLA",
    "QUALITY",
    "FitResult",
    "ScalingData",
    "ScalingLaw",
    "__version__",
    "bootstrap",
    "fit_law",
    "get_law",
    "holdout_error",
    "init_grid",
]
