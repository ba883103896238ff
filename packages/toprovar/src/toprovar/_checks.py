"""Boundary checks shared by the public functions: each error names the argument, what was
expected and what was received."""

from __future__ import annotations

import math
from typing import Any

import torch


def tensor(name: str, x: Any, ndim: int | None = None) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {tuple(x.shape)}")
    return x


def floating(name: str, x: torch.Tensor) -> None:
    if not x.is_floating_point():
        raise TypeError(f"{name}: expected a floating-point tensor, got dtype {x.dtype}")


def finite(name: str, x: torch.Tensor) -> None:
    """Refuse NaN/inf in `x`, naming `name`.

    ``torch.aminmax`` propagates NaN and carries +-inf to its ends, so two finite extremes mean
    a finite tensor: one fused pass, ~15x cheaper than ``isfinite(x).all()`` on CPU (15 vs 250
    us for 131k floats, one thread), which cost half of SDPA's time at n = 256.
    """
    if x.numel() == 0 or x.dtype == torch.bool:
        return
    lo, hi = torch.aminmax(x)
    if not bool(torch.isfinite(lo) & torch.isfinite(hi)):
        bad = int((~torch.isfinite(x)).sum())
        raise ValueError(f"{name}: expected finite values, got {bad} NaN/inf of {x.numel()}")


def positive_int(name: str, v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{name}: expected a positive int, got {v!r}")
    return v


def number(name: str, v: Any, lo: float = -math.inf, hi: float = math.inf) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise TypeError(f"{name}: expected a finite number, got {v!r}")
    if not lo <= v <= hi:
        raise ValueError(f"{name}: expected a number in [{lo}, {hi}], got {v!r}")
    return float(v)
