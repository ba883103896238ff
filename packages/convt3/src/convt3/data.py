"""Generated spatiotemporal data: forced PDEs on a grid (true 3x3 stencils) and moving digits.

- `pde_trajectories`: ``u_{k+1} = K * u_k + f_k`` with zero (Dirichlet) padding, where ``K`` is
  a 3x3 stencil: ``"heat"`` (explicit Euler of the heat equation, 5-point Laplacian, nu = 0.1),
  ``"advection_diffusion"`` (9-point Laplacian plus first-order upwind advection) or
  ``"pointwise"`` (``K = rho I``: no spatial coupling, the control where a 1x1 state kernel
  suffices). The forcing ``f_k = g(x) sin(omega k + phi)`` (a random smooth pattern, random
  frequency and phase per trajectory) is a known input, returned as channel 1.
- `moving_digits`: sklearn's 8x8 digits bouncing on a canvas (Moving-MNIST's recipe, offline).
- `load_moving_mnist`, `load_pdebench_2d`: readers of the paper's datasets in their published
  file formats, for a machine that has the files (nothing is downloaded).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from convt3.reference import depthwise_conv3x3

PDES = ("heat", "advection_diffusion", "pointwise")

LAPLACE_5 = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], dtype=np.float64)
LAPLACE_9 = np.array([[1, 4, 1], [4, -20, 4], [1, 4, 1]], dtype=np.float64) / 6


def stencil(kind: str) -> np.ndarray:
    """The true ``(3, 3)`` state kernel (cross-correlation) of a PDE task."""
    if kind == "heat":
        K = np.zeros((3, 3))
        K[1, 1] = 1.0
        return K + 0.1 * LAPLACE_5  # nu = 0.1: spectrum 0.6 + 0.2 cos + 0.2 cos > 0
    if kind == "advection_diffusion":
        K = np.zeros((3, 3))
        K[1, 1] = 1.0
        K += 0.12 * LAPLACE_9
        cy, cx = 0.25, 0.15  # velocity (cells per step) down and right: upwind takes u[i-1], u[j-1]
        K[1, 1] -= cy + cx
        K[0, 1] += cy
        K[1, 0] += cx
        return K
    if kind == "pointwise":
        K = np.zeros((3, 3))
        K[1, 1] = 0.95
        return K
    raise ValueError(f"kind: expected one of {PDES}, got {kind!r}")


def _smooth_field(rng: np.random.Generator, n: int, H: int, W: int, bumps: int = 3) -> np.ndarray:
    """``(n, H, W)`` sums of random Gaussian bumps of random sign, width 2-4 cells."""
    yy, xx = np.mgrid[0:H, 0:W]
    out = np.zeros((n, H, W))
    for _ in range(bumps):
        cy = rng.uniform(0, H, (n, 1, 1))
        cx = rng.uniform(0, W, (n, 1, 1))
        s = rng.uniform(2, 4, (n, 1, 1))
        amp = rng.choice([-1.0, 1.0], (n, 1, 1)) * rng.uniform(0.5, 1.0, (n, 1, 1))
        out += amp * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * s**2))
    return out


def pde_trajectories(
    kind: str, n: int, steps: int, size: int = 16, seed: int = 0, forcing: float = 0.1
) -> np.ndarray:
    """``(n, steps, 2, size, size)`` float32: channel 0 the field u_k, channel 1 the forcing f_k.

    ``u_{k+1} = stencil(kind) * u_k + f_k``; ``u_0`` is a random smooth field.
    """
    if kind not in PDES:
        raise ValueError(f"kind: expected one of {PDES}, got {kind!r}")
    for name, v in (("n", n), ("steps", steps), ("size", size)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}: expected an int >= 1, got {v!r}")
    rng = np.random.default_rng(seed)
    K = stencil(kind)[None]
    u = _smooth_field(rng, n, size, size)
    pattern = forcing * _smooth_field(rng, n, size, size)
    omega = rng.uniform(2 * np.pi / 40, 2 * np.pi / 10, (n, 1, 1))
    phase = rng.uniform(0, 2 * np.pi, (n, 1, 1))
    out = np.zeros((n, steps, 2, size, size))
    for k in range(steps):
        f = pattern * np.sin(omega * k + phase)
        out[:, k, 0], out[:, k, 1] = u, f
        u = depthwise_conv3x3(u[:, None], K)[:, 0] + f
    return out.astype(np.float32)


def moving_digits(
    digits: np.ndarray,
    n: int,
    steps: int,
    canvas: int = 32,
    per_frame: int = 2,
    seed: int = 0,
) -> np.ndarray:
    """``(n, steps, 1, canvas, canvas)`` float32 in [0, 1]: `per_frame` digits bouncing off the walls.

    `digits` ``(m, h, w)`` with values in [0, 1]; each sequence picks its digits, positions and
    integer velocities (1-2 pixels per frame on each axis) at random.
    """
    digits = np.asarray(digits, dtype=np.float64)
    if digits.ndim != 3 or digits.shape[1] > canvas or digits.shape[2] > canvas:
        raise ValueError(
            f"digits: expected (m, h, w) with h, w <= canvas={canvas}, got {digits.shape}"
        )
    rng = np.random.default_rng(seed)
    h, w = digits.shape[1:]
    out = np.zeros((n, steps, 1, canvas, canvas))
    for i in range(n):
        for _ in range(per_frame):
            img = digits[rng.integers(len(digits))]
            y, x = rng.integers(0, canvas - h + 1), rng.integers(0, canvas - w + 1)
            vy, vx = rng.choice([-2, -1, 1, 2]), rng.choice([-2, -1, 1, 2])
            for k in range(steps):
                frame = out[i, k, 0]
                frame[y : y + h, x : x + w] = np.maximum(frame[y : y + h, x : x + w], img)
                if not 0 <= y + vy <= canvas - h:
                    vy = -vy
                if not 0 <= x + vx <= canvas - w:
                    vx = -vx
                y, x = y + vy, x + vx
    return out.astype(np.float32)


def load_digit_images() -> np.ndarray:
    """sklearn's 1,797 8x8 digits scaled to [0, 1] (through `shared_core.data`; extra ``data``)."""
    from shared_core.data import load, require_extra

    require_extra("convt3", "data", "sklearn", "the moving-digits experiment")
    images, _ = load("digits")
    return np.asarray(images, dtype=np.float64) / 16.0


def load_moving_mnist(path: str | os.PathLike[str]) -> np.ndarray:
    """Moving-MNIST in its published file format -> ``(N, T, 1, H, W)`` float32 in [0, 1].

    The standard file (``mnist_test_seq.npy``, Srivastava et al. 2015) is a uint8 array stored
    time-major, ``(T, N, H, W)`` = ``(20, 10000, 64, 64)``; longer sequences generated the same
    way (as ConvS5's 300- and 600-frame sets) keep that layout.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no Moving-MNIST file at {str(p)!r}")
    arr = np.load(p, allow_pickle=False)
    if arr.ndim != 4 or arr.dtype != np.uint8:
        raise ValueError(
            f"path: expected a uint8 array (time, sequences, height, width), got {arr.dtype} {arr.shape}"
        )
    return (arr.transpose(1, 0, 2, 3)[:, :, None] / 255.0).astype(np.float32)


def load_pdebench_2d(path: str | os.PathLike[str], limit: int | None = None) -> np.ndarray:
    """A PDEBench 2-D HDF5 file (e.g. ``2D_diff-react_NA_NA.h5``, ``2D_rdb_NA_NA.h5``) -> ``(N, T, C, H, W)``.

    PDEBench stores one group per simulation (``"0000"``, ``"0001"``, ...) holding ``data``
    ``(T, H, W, C)`` float32 (plus ``grid/x``, ``grid/y``, ``grid/t``). `limit`: the first
    simulations only. Needs the ``paper`` extra (h5py).
    """
    from shared_core.data import require_extra

    require_extra("convt3", "paper", "h5py", "reading PDEBench files")
    import h5py

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no PDEBench file at {str(p)!r}")
    out = []
    with h5py.File(p, "r") as f:
        names = sorted(k for k in f if isinstance(f[k], h5py.Group) and "data" in f[k])
        if not names:
            raise ValueError(f"path: {str(p)!r} has no simulation groups with a 'data' array")
        for name in names[:limit]:
            data = np.asarray(f[name]["data"], dtype=np.float32)
            if data.ndim != 4:
                raise ValueError(f"path: {name}/data has shape {data.shape}, expected (T, H, W, C)")
            out.append(data.transpose(0, 3, 1, 2))
    return np.stack(out)
