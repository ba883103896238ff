"""ParetoVAE: the symmetric Pareto (symPareto) distribution, its closed-form gamma-power
divergence, and heavy-tailed VAEs (ParetoVAE with t or symPareto decoder, and the VAE,
LaplaceVAE and t3VAE baselines on the same MLP).

The API is importable from here (``paretovae.SymPareto``, ``paretovae.HeavyTailVAE``, ...);
each name is loaded on first use, so ``import paretovae`` (and ``paretovae --help``) does not
import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

if TYPE_CHECKING:
    from paretovae.distribution import SymPareto
    from paretovae.divergence import (
        expected_abs_shift,
        gamma_power_divergence,
        sympareto_gamma,
        sympareto_gamma_divergence,
        sympareto_shift_bound,
        sympareto_shift_slope,
    )
    from paretovae.model import FAMILIES, HeavyTailVAE, VAEConfig

_WHERE = {
    "SymPareto": "paretovae.distribution",
    "expected_abs_shift": "paretovae.divergence",
    "gamma_power_divergence": "paretovae.divergence",
    "sympareto_gamma": "paretovae.divergence",
    "sympareto_gamma_divergence": "paretovae.divergence",
    "sympareto_shift_bound": "paretovae.divergence",
    "sympareto_shift_slope": "paretovae.divergence",
    "FAMILIES": "paretovae.model",
    "HeavyTailVAE": "paretovae.model",
    "VAEConfig": "paretovae.model",
}

__all__ = [
    "FAMILIES",
    "HeavyTailVAE",
    "SymPareto",
    "VAEConfig",
    "__version__",
    "expected_abs_shift",
    "gamma_power_divergence",
    "sympareto_gamma",
    "sympareto_gamma_divergence",
    "sympareto_shift_bound",
    "sympareto_shift_slope",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, distribution="paretovae")
