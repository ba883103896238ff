"""Slow, exact ConvSSM recurrences in float64 numpy: the oracle the fast layers are tested against.

The ConvSSM of the paper (Smith et al. 2023, eq. 1; Hong et al. 2026, sec. 3):

    X_k = A_bar * X_{k-1} + B_bar * U_k,        Y_k = 2 Re(C * X_k),

with tensors ``X_k`` ``(P, H, W)`` complex, ``U_k`` ``(U, H, W)`` real and ``*`` a convolution
with zero ("SAME") padding. Nothing here diagonalises anything: the state update is applied
as an explicit convolution (``discretization="direct"``) or as the matrix exponential of the
explicit (HW x HW) operator of the continuous-time 3x3 kernel (``"zoh"``), so agreement with
the parallel scan in the eigenbasis checks the whole construction.

- ``convt3_sequential``: ConvT3, channel p's continuous state kernel ``Lambda_p K_p`` with
  ``K_p = ptt_kernel(coefficients[p])`` (3x3). ``"zoh"``: ``A_bar_p = expm(Delta_p Lambda_p
  Op(K_p))``, ``B_bar_p = (Lambda_p Op(K_p))^{-1} (A_bar_p - I) B_p`` (zero-order hold, as
  ConvS5). ``"direct"``: ``A_bar_p = exp(Lambda_p Delta_p) K_p`` applied by a 3x3 conv2d,
  ``B_bar_p = (exp(Lambda_p Delta_p) - 1) / Lambda_p B_p``.
- ``convs5_sequential``: ConvS5 (NVlabs/ConvSSM ``apply_convSSM_sequential``): a diagonal,
  ZOH-discretised 1x1 state kernel.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import expm

from convt3.spectral import ptt_kernel


def conv2d_same(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Cross-correlation with zero padding: ``x`` ``(N, C_in, H, W)``, ``w`` ``(C_out, C_in, k, k)``, k odd."""
    k = w.shape[-1]
    if w.shape[-2] != k or k % 2 == 0:
        raise ValueError(f"w: expected an odd square kernel, got shape {w.shape}")
    r = k // 2
    N, _, H, W = x.shape
    xp = np.pad(x, [(0, 0), (0, 0), (r, r), (r, r)])
    out = np.zeros((N, w.shape[0], H, W), dtype=np.result_type(x, w))
    for dy in range(k):
        for dx in range(k):
            out += np.einsum("oi,nihw->nohw", w[:, :, dy, dx], xp[:, :, dy : dy + H, dx : dx + W])
    return out


def depthwise_conv3x3(x: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Channel p of ``x`` ``(N, P, H, W)`` convolved with its own ``K[p]`` ``(3, 3)``, zero padding."""
    H, W = x.shape[-2:]
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    out = np.zeros(x.shape, dtype=np.result_type(x, K))
    for dy in range(3):
        for dx in range(3):
            out += K[None, :, dy, dx, None, None] * xp[:, :, dy : dy + H, dx : dx + W]
    return out


def explicit_operator(K: np.ndarray, H: int, W: int) -> np.ndarray:
    """The ``(H W, H W)`` matrix of the zero-padded 3x3 convolution with ``K`` (row-major pixels)."""
    basis = np.eye(H * W).reshape(H * W, 1, H, W)
    cols = depthwise_conv3x3(basis, np.asarray(K)[None])  # column i = conv of unit pixel i
    return cols.reshape(H * W, H * W).T


def convt3_sequential(
    u: np.ndarray,
    Lambda: np.ndarray,
    step: np.ndarray,
    coefficients: np.ndarray,
    B: np.ndarray,
    C: np.ndarray,
    x0: np.ndarray | None = None,
    alpha_h: float = 1.0,
    alpha_w: float = 1.0,
    discretization: str = "zoh",
) -> tuple[np.ndarray, np.ndarray]:
    """ConvT3 one step at a time; returns ``(ys (N, T, U, H, W) real, x_T (N, P, H, W) complex)``.

    Args:
        u: inputs ``(N, T, U, H, W)``.
        Lambda: continuous eigenvalues of the hidden-state matrix ``(P,)`` complex, Re < 0.
        step: discretisation steps ``Delta`` ``(P,)`` > 0.
        coefficients: ``(P, 4)`` ``(a, b, c, d)`` of each channel's spatial kernel (`ptt_kernel`).
        B: input kernel ``(P, U, k_B, k_B)`` complex. C: output kernel ``(U, P, k_C, k_C)`` complex.
        x0: initial state ``(N, P, H, W)`` in pixel space (default zeros).
    """
    if discretization not in ("zoh", "direct"):
        raise ValueError(f"discretization: expected 'zoh' or 'direct', got {discretization!r}")
    if not np.all(np.isfinite(u)):
        raise ValueError("u: contains NaN or infinite values")
    N, T, _, H, W = u.shape
    P = Lambda.shape[0]
    K = ptt_kernel(coefficients, alpha_h, alpha_w)  # (P, 3, 3)
    x = np.zeros((N, P, H, W), complex) if x0 is None else np.asarray(x0, complex).copy()
    if discretization == "zoh":
        A_bar, B_map = [], []
        for p in range(P):
            M = Lambda[p] * explicit_operator(K[p], H, W)  # continuous generator, (HW, HW)
            Ad = expm(step[p] * M)
            A_bar.append(Ad)
            B_map.append(np.linalg.solve(M, Ad - np.eye(H * W)))
    else:
        lam_bar = np.exp(Lambda * step)
        gain = (lam_bar - 1) / Lambda
    ys = np.zeros((N, T, C.shape[0], H, W))
    for k in range(T):
        Bu = conv2d_same(u[:, k].astype(complex), B)  # (N, P, H, W)
        if discretization == "zoh":
            flat_x, flat_bu = x.reshape(N, P, H * W), Bu.reshape(N, P, H * W)
            x = np.stack(
                [flat_x[:, p] @ A_bar[p].T + flat_bu[:, p] @ B_map[p].T for p in range(P)], 1
            ).reshape(N, P, H, W)
        else:
            x = (
                lam_bar[None, :, None, None] * depthwise_conv3x3(x, K)
                + gain[None, :, None, None] * Bu
            )
        ys[:, k] = 2 * conv2d_same(x, C).real
    return ys, x


def convs5_sequential(
    u: np.ndarray,
    Lambda: np.ndarray,
    step: np.ndarray,
    B: np.ndarray,
    C: np.ndarray,
    x0: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """ConvS5 one step at a time (1x1 diagonal state kernel, ZOH); same shapes as `convt3_sequential`."""
    N, T, _, H, W = u.shape
    P = Lambda.shape[0]
    lam_bar = np.exp(Lambda * step)
    B_bar = ((lam_bar - 1) / Lambda)[:, None, None, None] * B  # ZOH of a diagonal system
    x = np.zeros((N, P, H, W), complex) if x0 is None else np.asarray(x0, complex).copy()
    ys = np.zeros((N, T, C.shape[0], H, W))
    for k in range(T):
        x = lam_bar[None, :, None, None] * x + conv2d_same(u[:, k].astype(complex), B_bar)
        ys[:, k] = 2 * conv2d_same(x, C).real
    return ys, x
