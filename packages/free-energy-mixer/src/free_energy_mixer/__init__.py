"""Free Energy Mixer (Lu & Yang, ICLR 2026): a per-channel free-energy read of attention priors.

`FEMAttention` is the drop-in layer; `free_energy_read` the one-prior-call read of the mean
and free-energy values; `softmax_prior`, `linear_prior`, `gla_prior` the built-in priors.
Names are loaded on first use, so ``import free_energy_mixer`` (and the CLI's ``--help``)
does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

if TYPE_CHECKING:
    from free_energy_mixer.fem import DEFAULT_CAP, clip_values, combine, free_energy_read
    from free_energy_mixer.layer import (
        BaseAttention,
        FEMAttention,
        FEMCache,
        FEMConfig,
        RotaryEmbedding,
    )
    from free_energy_mixer.model import MIXERS, CausalLM, LMConfig
    from free_energy_mixer.priors import (
        Prior,
        chunk_normalized_read,
        feature_map,
        gla_prior,
        linear_prior,
        recurrent_normalized_read,
        softmax_prior,
    )
    from free_energy_mixer.tdc import TimeDecayCondition, decay_scan

_HOME = {
    "fem": ("DEFAULT_CAP", "clip_values", "combine", "free_energy_read"),
    "layer": ("BaseAttention", "FEMAttention", "FEMCache", "FEMConfig", "RotaryEmbedding"),
    "model": ("MIXERS", "CausalLM", "LMConfig"),
    "priors": (
        "Prior",
        "chunk_normalized_read",
        "feature_map",
        "gla_prior",
        "linear_prior",
        "recurrent_normalized_read",
        "softmax_prior",
    ),
    "tdc": ("TimeDecayCondition", "decay_scan"),
}
_MODULE_OF = {name: module for module, names in _HOME.items() for name in names}

__all__ = [
    "DEFAULT_CAP",
    "MIXERS",
    "BaseAttention",
    "CausalLM",
    "FEMAttention",
    "FEMCache",
    "FEMConfig",
    "LMConfig",
    "Prior",
    "RotaryEmbedding",
    "TimeDecayCondition",
    "chunk_normalized_read",
    "clip_values",
    "combine",
    "decay_scan",
    "feature_map",
    "free_energy_read",
    "gla_prior",
    "linear_prior",
    "recurrent_normalized_read",
    "softmax_prior",
]


__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF, distribution="free-energy-mixer")
