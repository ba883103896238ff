"""Boundary checks shared by the public functions: each names the argument, the value received
and what was expected."""

from __future__ import annotations

import math

import torch


def check_tail_index(name: str, nu: object, above: float) -> None:
    """A real ``nu > above`` (``above`` = 0 for a density, 1 for the gamma-power divergence,
    whose power-(1 + gamma) integral diverges at nu <= 1)."""
    if isinstance(nu, bool) or not isinstance(nu, int | float):
        raise TypeError(f"{name}: expected a float, got {type(nu).__name__} {nu!r}")
    if not math.isfinite(nu) or nu <= above:
        raise ValueError(f"{name}: expected a finite value > {above:g}, got {nu!r}")


def check_finite_tensor(name: str, t: object) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{name}: expected a floating-point tensor, got dtype {t.dtype}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name}: contains NaN or infinite values")


def check_positive_tensor(name: str, t: object) -> None:
    check_finite_tensor(name, t)
    assert isinstance(t, torch.Tensor)
    if bool((t <= 0).any()):
        raise ValueError(f"{name}: expected every entry > 0, got min {t.min().item():.4g}")


def check_positive_float(name: str, value: object) -> None:
    check_tail_index(name, value, above=0.0)


def check_nonneg_float(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name}: expected a float, got {type(value).__name__} {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}: expected a finite value >= 0, got {value!r}")


def check_unit_images(name: str, x: object) -> None:
    """Images as floats in [0, 1] (no NaN)."""
    check_finite_tensor(name, x)
    assert isinstance(x, torch.Tensor)
    if x.numel() and (float(x.min()) < 0.0 or float(x.max()) > 1.0):
        raise ValueError(
            f"{name}: expected pixel values in [0, 1], got range "
            f"[{float(x.min()):.4g}, {float(x.max()):.4g}]"
        )
