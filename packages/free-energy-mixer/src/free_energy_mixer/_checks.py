"""Boundary checks of the public functions: each error names the argument, what was expected
and what was received."""

from __future__ import annotations

import math

import torch

FLOAT_DTYPES = (torch.float64, torch.float32, torch.bfloat16, torch.float16)


def check_tensor(name: str, x: object, ndim: int, layout: str) -> torch.Tensor:
    """`x` is a floating tensor with `ndim` dimensions (`layout` names them) and finite values."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor {layout}, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name}: expected a floating dtype {FLOAT_DTYPES}, got {x.dtype}")
    if x.ndim != ndim:
        raise ValueError(f"{name}: expected shape {layout}, got {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"{name}: expected a non-empty tensor {layout}, got {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name}: contains NaN or infinite values")
    return x


def check_same(name: str, x: torch.Tensor, ref_name: str, ref: torch.Tensor, dims: str) -> None:
    """`x` has the dtype and device of `ref` and agrees with it on the dimensions `dims`."""
    if x.dtype != ref.dtype:
        raise TypeError(f"{name}: dtype {x.dtype} differs from {ref_name}'s {ref.dtype}")
    if x.device != ref.device:
        raise ValueError(f"{name}: device {x.device} differs from {ref_name}'s {ref.device}")
    for d, letter in enumerate(dims):
        if letter != "." and x.shape[d] != ref.shape[d]:
            raise ValueError(
                f"{name}: shape {tuple(x.shape)} does not match {ref_name}'s {tuple(ref.shape)} "
                f"in dimension {d}"
            )


def check_positive(name: str, value: object, integer: bool = False) -> None:
    """A finite number > 0 (an int when `integer`)."""
    if integer:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name}: expected a positive int, got {value!r}")
        return
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name}: expected a finite number > 0, got {value!r}")
