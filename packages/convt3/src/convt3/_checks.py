"""Boundary checks shared by the Flax and torch layers (they see only shapes and plain values)."""

from __future__ import annotations

from collections.abc import Sequence

from convt3.params import DISCRETIZATIONS, LAMBDA_PARAMS
from convt3.spectral import check_alpha, check_grid

STATE_KERNELS = ("3x3", "1x1", "3x3_shared")  # ConvT3, ConvS5, MiniT3


def check_int(name: str, value: object, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int >= {low}, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name}: expected an int >= {low}, got {value}")
    return value


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name}: expected one of {tuple(choices)}, got {value!r}")
    return str(value)


def check_layer_config(
    features: int,
    state_size: int,
    kernel_b: int,
    kernel_c: int,
    blocks: int,
    state_kernel: str,
    discretization: str,
    lambda_param: str,
    alpha_h: float,
    alpha_w: float,
    dt_min: float,
    dt_max: float,
) -> None:
    """Constructor arguments of a ConvT3/ConvS5 SSM layer."""
    check_int("features", features)
    check_int("state_size", state_size, 2)
    if state_size % 2:
        raise ValueError(
            f"state_size: expected an even int (P = state_size // 2 conjugate pairs), got {state_size}"
        )
    for name, k in (("kernel_b", kernel_b), ("kernel_c", kernel_c)):
        check_int(name, k)
        if k % 2 == 0:
            raise ValueError(f"{name}: expected an odd kernel size (SAME padding), got {k}")
    check_int("blocks", blocks)
    check_choice("state_kernel", state_kernel, STATE_KERNELS)
    check_choice("discretization", discretization, DISCRETIZATIONS)
    check_choice("lambda_param", lambda_param, LAMBDA_PARAMS)
    check_alpha("alpha_h", alpha_h)
    check_alpha("alpha_w", alpha_w)
    if not (0 < dt_min <= dt_max):
        raise ValueError(f"dt_min, dt_max: expected 0 < dt_min <= dt_max, got {dt_min}, {dt_max}")


def check_sequence_shape(
    shape: Sequence[int], features: int, alpha_h: float, alpha_w: float, name: str = "u"
) -> tuple[int, int, int, int, int]:
    """``(batch, time, features, H, W)`` with a grid the sine transform can handle."""
    if len(shape) != 5:
        raise ValueError(
            f"{name}: expected shape (batch, time, features, height, width), got {tuple(shape)}"
        )
    N, T, U, H, W = (int(s) for s in shape)
    if N < 1 or T < 1:
        raise ValueError(f"{name}: expected batch >= 1 and time >= 1, got shape {tuple(shape)}")
    if features != U:
        raise ValueError(
            f"{name}: expected {features} features on axis 2, got shape {tuple(shape)}"
        )
    check_grid(f"{name} height", H, alpha_h)
    check_grid(f"{name} width", W, alpha_w)
    return N, T, U, H, W


def check_state_shape(shape: Sequence[int], expected: tuple[int, ...], name: str = "state") -> None:
    if tuple(int(s) for s in shape) != expected:
        raise ValueError(
            f"{name}: expected shape (batch, P, height, width) = {expected}, got {tuple(shape)}"
        )
