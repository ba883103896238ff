"""ConvT3: convolutional state space models with 3x3 state kernels, trained by a parallel scan.

``import convt3`` needs neither JAX nor PyTorch: the framework-free parts (the spectral
construction, parameters and the numpy reference) are plain modules; the JAX/Flax API is
`convt3.flax` (primary) and the PyTorch twin `convt3.torch`, each behind its extra.
"""

from __future__ import annotations

from typing import Any

from convt3.params import init_ssm_params, reference_arguments, state_coefficients
from convt3.reference import convs5_sequential, convt3_sequential
from convt3.spectral import (
    closed_form_eigenvalues,
    corners_to_coefficients,
    ptt_kernel,
    sine_basis,
)

__all__ = [
    "__version__",
    "closed_form_eigenvalues",
    "convs5_sequential",
    "convt3_sequential",
    "corners_to_coefficients",
    "init_ssm_params",
    "ptt_kernel",
    "reference_arguments",
    "sine_basis",
    "state_coefficients",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        return version("convt3")
    raise AttributeError(f"module 'convt3' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
