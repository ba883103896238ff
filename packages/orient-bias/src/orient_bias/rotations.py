"""Uniform (Haar-measure) random rotations of SO(3) in numpy and torch, and rotation utilities.

A rotation is a ``(..., 3, 3)`` proper orthogonal matrix acting on row vectors of
positions as ``x' = x @ R.T`` (equivalently ``x'_i = R x_i``).

Sampling follows Shoemake (1992), "Uniform Random Rotations", Graphics Gems III: with
``u1, u2, u3 ~ U[0, 1)`` the unit quaternion

    q = (sqrt(1-u1) sin 2πu2, sqrt(1-u1) cos 2πu2, sqrt(u1) sin 2πu3, sqrt(u1) cos 2πu3)

is uniform on S^3, and S^3 -> SO(3) pushes the sphere's area forward to the Haar
measure. The rotation angle ω of a Haar rotation has density (1 - cos ω)/π on [0, π]
and CDF (ω - sin ω)/π, which the tests check.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = [
    "geodesic_angle",
    "haar_angle_cdf",
    "haar_angle_pdf",
    "matrix_to_quaternion",
    "quaternion_to_matrix",
    "random_rotations",
    "random_rotations_bounded",
    "random_rotations_torch",
    "rotation_6d",
    "rotation_angle",
]


def _check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n: expected a non-negative int, got {n!r}")
    return int(n)


def _shoemake(u1: Any, u2: Any, u3: Any, lib: Any) -> Any:
    a, b = lib.sqrt(1.0 - u1), lib.sqrt(u1)
    t2, t3 = 2.0 * math.pi * u2, 2.0 * math.pi * u3
    # (x, y, z, w) in Shoemake's order; we return scalar-first (w, x, y, z)
    x, y = a * lib.sin(t2), a * lib.cos(t2)
    z, w = b * lib.sin(t3), b * lib.cos(t3)
    return lib.stack([w, x, y, z], -1)


def quaternion_to_matrix(q: Any) -> Any:
    """Unit quaternions ``(..., 4)``, scalar first ``(w, x, y, z)``, to rotation matrices ``(..., 3, 3)``.

    Works on numpy arrays and torch tensors; `q` is normalised first, so any non-zero
    4-vector is accepted.
    """
    lib = _lib(q)
    if q.shape[-1] != 4:
        raise ValueError(f"q: expected shape (..., 4), got {tuple(q.shape)}")
    norm = lib.sqrt((q * q).sum(-1, keepdims=True) if lib is np else (q * q).sum(-1, keepdim=True))
    q = q / norm
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]
    return lib.stack([lib.stack(r, -1) for r in rows], -2)


def matrix_to_quaternion(R: np.ndarray) -> np.ndarray:
    """Rotation matrices ``(..., 3, 3)`` to unit quaternions ``(..., 4)`` (scalar first, ``w >= 0``).

    Uses the numerically stable branch on the largest of ``(w², x², y², z²)``.
    """
    R = np.asarray(R, dtype=np.float64)
    if R.shape[-2:] != (3, 3):
        raise ValueError(f"R: expected shape (..., 3, 3), got {R.shape}")
    m = R.reshape(-1, 3, 3)
    tr = np.trace(m, axis1=1, axis2=2)
    # 4 * squared components (w, x, y, z)
    d = np.stack(
        [1 + tr, 1 + 2 * m[:, 0, 0] - tr, 1 + 2 * m[:, 1, 1] - tr, 1 + 2 * m[:, 2, 2] - tr], -1
    )
    k = d.argmax(-1)
    s = np.sqrt(np.maximum(d[np.arange(len(m)), k], 1e-300))  # = 2 |q_k|
    q = np.empty((len(m), 4))
    r21, r12 = m[:, 2, 1], m[:, 1, 2]
    r02, r20 = m[:, 0, 2], m[:, 2, 0]
    r10, r01 = m[:, 1, 0], m[:, 0, 1]
    cand = [
        np.stack([s, (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s], -1),
        np.stack([(r21 - r12) / s, s, (r01 + r10) / s, (r02 + r20) / s], -1),
        np.stack([(r02 - r20) / s, (r01 + r10) / s, s, (r12 + r21) / s], -1),
        np.stack([(r10 - r01) / s, (r02 + r20) / s, (r12 + r21) / s, s], -1),
    ]
    for j in range(4):
        sel = k == j
        q[sel] = cand[j][sel] / 2
    q *= np.where(q[:, :1] < 0, -1.0, 1.0)
    return q.reshape(*R.shape[:-2], 4)


def _lib(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return np
    if type(x).__module__.startswith("torch"):
        import torch

        return torch
    raise TypeError(f"expected a numpy array or torch tensor, got {type(x).__name__}")


def random_rotations(n: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """``n`` independent Haar-uniform rotations ``(n, 3, 3)`` (float64, det +1), Shoemake's method.

    `rng` is a numpy Generator or a seed; the same seed gives the same rotations.
    """
    n = _check_n(n)
    g = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    u = g.random((3, n))
    return quaternion_to_matrix(_shoemake(u[0], u[1], u[2], np))


def random_rotations_bounded(
    n: int, max_angle: float, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """``n`` Haar rotations conditioned on a rotation angle ω <= `max_angle` (degrees), ``(n, 3, 3)``.

    The paper's "pre-rotation up to α" (official ``UniformRandomRotateAngleBounded``, which
    rejection-samples Haar rotations until ω <= α). Sampled exactly instead of by rejection: ω
    from the Haar angle density restricted to [0, α] (inverse CDF of (ω - sin ω)/π by
    bisection), axis uniform on the sphere; a Haar rotation's axis is uniform and independent
    of its angle, so the law is the same. ``max_angle = 0`` gives identities.
    """
    n = _check_n(n)
    if not (isinstance(max_angle, int | float) and 0 <= max_angle <= 180):
        raise ValueError(f"max_angle: expected degrees in [0, 180], got {max_angle!r}")
    g = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    alpha = math.radians(max_angle)
    target = g.random(n) * (alpha - math.sin(alpha))  # ω - sin ω, uniform on [0, F(α)]
    lo, hi = np.zeros(n), np.full(n, alpha)
    for _ in range(60):  # bisection of the increasing ω - sin ω
        mid = (lo + hi) / 2
        below = mid - np.sin(mid) < target
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    omega = (lo + hi) / 2
    axis = g.standard_normal((n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    q = np.concatenate([np.cos(omega / 2)[:, None], np.sin(omega / 2)[:, None] * axis], 1)
    return quaternion_to_matrix(q)


def random_rotations_torch(
    n: int,
    generator: torch.Generator | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Torch twin of `random_rotations`: ``(n, 3, 3)`` Haar-uniform rotations on `device`.

    The uniforms are drawn in float64 on the CPU from `generator` (so a seed gives the same
    rotations on every device), then cast to `dtype` (default float32) and moved.
    """
    import torch

    n = _check_n(n)
    u = torch.rand((3, n), generator=generator, dtype=torch.float64)
    R = quaternion_to_matrix(_shoemake(u[0], u[1], u[2], torch))
    return R.to(dtype=dtype or torch.float32, device=device)


def rotation_angle(R: Any) -> Any:
    """The rotation angle ω = arccos((tr R - 1)/2) in [0, π] of each ``(..., 3, 3)`` matrix."""
    lib = _lib(R)
    tr = R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2]
    c = (tr - 1.0) / 2.0
    return lib.arccos(lib.clip(c, -1.0, 1.0)) if lib is np else lib.arccos(c.clamp(-1.0, 1.0))


def geodesic_angle(Ra: np.ndarray, Rb: np.ndarray) -> np.ndarray:
    """Geodesic distance on SO(3), ω(R_a R_bᵀ), broadcasting over leading axes."""
    Ra, Rb = np.asarray(Ra, dtype=np.float64), np.asarray(Rb, dtype=np.float64)
    if Ra.shape[-2:] != (3, 3) or Rb.shape[-2:] != (3, 3):
        raise ValueError(
            f"Rb: expected two arrays of shape (..., 3, 3), got {Ra.shape} and {Rb.shape}"
        )
    try:
        np.broadcast_shapes(Ra.shape, Rb.shape)
    except ValueError:
        raise ValueError(f"Rb: shape {Rb.shape} does not broadcast with Ra's {Ra.shape}") from None
    # tr(Ra Rb^T) = sum_ij Ra_ij Rb_ij
    tr = (Ra * Rb).sum((-1, -2))
    return np.arccos(np.clip((tr - 1.0) / 2.0, -1.0, 1.0))


def haar_angle_pdf(omega: Any) -> np.ndarray:
    """Density (1 - cos ω)/π of the rotation angle of a Haar-uniform rotation, ω in [0, π]."""
    w = np.asarray(omega, dtype=np.float64)
    return np.where((w >= 0) & (w <= np.pi), (1.0 - np.cos(w)) / np.pi, 0.0)


def haar_angle_cdf(omega: Any) -> np.ndarray:
    """CDF (ω - sin ω)/π of the Haar rotation angle (clipped to [0, 1] outside [0, π])."""
    w = np.clip(np.asarray(omega, dtype=np.float64), 0.0, np.pi)
    return (w - np.sin(w)) / np.pi


def rotation_6d(R: Any) -> Any:
    """The 6D representation (Zhou et al. 2019): the first two ROWS of R, ``(..., 6)``.

    For a principal-axes frame these rows are PC1 and PC2 in lab coordinates, the input
    the paper's orientation-only regressor uses (``ReplaceXWithPCAVectors``).
    """
    if R.shape[-2:] != (3, 3):
        raise ValueError(f"R: expected shape (..., 3, 3), got {tuple(R.shape)}")
    return R[..., :2, :].reshape(*R.shape[:-2], 6)
