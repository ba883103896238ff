"""ParetoVAE: the symmetric Pareto distribution, its gamma-power divergence and heavy-tailed VAEs."""

from paretovae.distribution import SymPareto
from paretovae.divergence import (
    expected_abs_shift,
    gamma_power_divergence,
    sympareto_gamma,
    sympareto_gamma_divergence,
    sympareto_shift_bound,
)

__all__ = [
    "SymPareto",
    "expected_abs_shift",
    "gamma_power_divergence",
    "sympareto_gamma",
    "sympareto_gamma_divergence",
    "sympareto_shift_bound",
]
