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


def check_linear_read(
    phi_q: object,
    phi_k: object,
    v: object,
    log_decay: object,
    state: object,
    chunk_size: int = 1,
) -> None:
    """Shapes of the linear priors' inputs (values are not scanned: that is the caller's job)."""
    layout = "(batch, heads, time, d_k)"
    for name, x in (("phi_q", phi_q), ("phi_k", phi_k), ("v", v)):
        if not isinstance(x, torch.Tensor) or x.ndim != 4 or x.numel() == 0:
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"{name}: expected a non-empty tensor {layout}, got {got}")
    assert isinstance(phi_q, torch.Tensor) and isinstance(phi_k, torch.Tensor)
    assert isinstance(v, torch.Tensor)
    if phi_k.shape != phi_q.shape:
        raise ValueError(
            f"phi_k: expected the shape of phi_q {tuple(phi_q.shape)}, got {tuple(phi_k.shape)}"
        )
    if v.shape[:3] != phi_q.shape[:3]:
        raise ValueError(
            f"v: expected (batch, heads, time) = {tuple(phi_q.shape[:3])}, got {tuple(v.shape)}"
        )
    if log_decay is not None and (
        not isinstance(log_decay, torch.Tensor) or log_decay.shape != phi_q.shape[:3]
    ):
        got_decay = tuple(log_decay.shape) if isinstance(log_decay, torch.Tensor) else log_decay
        raise ValueError(
            f"log_decay: expected shape (batch, heads, time) = {tuple(phi_q.shape[:3])}, got {got_decay}"
        )
    B, H, _, dk = phi_q.shape
    want = (B, H, dk, v.shape[-1] + 1)
    if state is not None and (not isinstance(state, torch.Tensor) or tuple(state.shape) != want):
        got_state = tuple(state.shape) if isinstance(state, torch.Tensor) else state
        raise ValueError(
            f"state: expected shape (batch, heads, d_k, d_v + 1) = {want}, got {got_state}"
        )
    check_positive("chunk_size", chunk_size, integer=True)
