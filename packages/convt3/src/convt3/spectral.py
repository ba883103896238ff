"""The spatial half of ConvT3's state tensor, in numpy: PTT kernels, their spectra and eigenbasis.

A tridiagonal Toeplitz matrix ``T(l, u)`` of size n (``l`` below, ``u`` above the diagonal,
zero diagonal) with ``l * u = 1`` has eigenvalues ``2 cos(m pi / (n + 1))``, m = 1..n, and
eigenvectors ``v_m(j) = alpha^{j/2} sin(j m pi / (n + 1))`` with ``alpha = l / u``; every such
matrix with the same ratio ``alpha`` shares them (the paper's "proportional constraint").
ConvT3's spatial operator for one hidden channel is

    S = a I + (b/2) T_H (x) I + (c/2) I (x) T_W + (d/4) T_H (x) T_W,

a 3x3 convolution with zero padding whose eigenvalues are the bilinear form

    eps(theta_m, phi_n) = a + b cos(theta_m) + c cos(phi_n) + d cos(theta_m) cos(phi_n).

Because eps is bilinear in (cos theta, cos phi) in [-1, 1]^2, it is positive everywhere when
it is positive at the four corners (+-1, +-1); the paper parameterises those corner values
(``4 softmax``) instead of (a, b, c, d). `corners_to_coefficients` maps between the two.

Corner order everywhere: ``(++, +-, -+, --)`` for (cos theta, cos phi) = (+1, +1), (+1, -1),
(-1, +1), (-1, -1).
"""

from __future__ import annotations

import math

import numpy as np

MAX_CONDITION = 1e4
"""Largest condition number of a non-orthogonal sine basis (``alpha != 1``) we accept."""


def check_alpha(name: str, alpha: float) -> float:
    """A ratio ``alpha = l / u`` of the off-diagonals: a finite float > 0."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise TypeError(f"{name}: expected a positive float, got {type(alpha).__name__}")
    if not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(
            f"{name}: expected a finite ratio l/u > 0 (the off-diagonal product must be "
            f"positive for real eigenvalues), got {alpha!r}"
        )
    return float(alpha)


def check_grid(name: str, n: int, alpha: float = 1.0) -> int:
    """A grid side the sine transform can handle: an int >= 1, well conditioned for `alpha`.

    For ``alpha != 1`` the eigenvectors carry the factor ``alpha^{j/2}``, so the basis has
    condition number about ``max(alpha, 1/alpha)^{(n-1)/2}``; above `MAX_CONDITION` the
    transform would lose most of float32's digits, and we refuse.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name}: expected an int grid size, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"{name}: expected a grid size >= 1, got {n}")
    alpha = check_alpha("alpha", alpha)
    cond = max(alpha, 1 / alpha) ** ((int(n) - 1) / 2)
    if cond > MAX_CONDITION:
        raise ValueError(
            f"{name}: a grid of {n} with off-diagonal ratio alpha={alpha} gives a sine basis with "
            f"condition number {cond:.3g} > {MAX_CONDITION:g}; use alpha closer to 1 or a "
            "smaller grid"
        )
    return int(n)


def off_diagonals(alpha: float) -> tuple[float, float]:
    """``(l, u)`` with ``l / u = alpha`` and ``l * u = 1`` (so T's spectrum is ``2 cos``)."""
    alpha = check_alpha("alpha", alpha)
    return math.sqrt(alpha), 1 / math.sqrt(alpha)


def tridiagonal_toeplitz(n: int, lower: float, diag: float, upper: float) -> np.ndarray:
    """The ``(n, n)`` matrix with `diag` on the diagonal, `lower` below it, `upper` above it."""
    return (
        diag * np.eye(n) + lower * np.eye(n, k=-1) + upper * np.eye(n, k=1)
    )  # (T x)_j = lower x_{j-1} + diag x_j + upper x_{j+1}


def sine_basis(n: int, alpha: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eigenbasis of every ``T(l, u)`` with ``l / u = alpha``: ``(Q, Q_inv, cos_theta)``.

    ``Q[j, m] = alpha^{j/2} sin(j m pi / (n + 1))`` (j, m from 1), ``Q_inv`` its exact inverse
    ``(2 / (n + 1)) sin(...) alpha^{-j/2}`` (the DST-I matrix is its own inverse up to that
    factor) and ``cos_theta[m] = cos(m pi / (n + 1))``; float64.
    """
    n = check_grid("n", n, alpha)
    j = np.arange(1, n + 1)
    sines = np.sin(np.outer(j, j) * np.pi / (n + 1))  # symmetric DST-I matrix
    scale = alpha ** (j / 2.0)
    Q = scale[:, None] * sines
    Q_inv = (2.0 / (n + 1)) * sines / scale[None, :]
    return Q, Q_inv, np.cos(j * np.pi / (n + 1))


def check_quads(name: str, value: np.ndarray) -> np.ndarray:
    """A finite float64 array of shape ``(..., 4)`` (corner values or coefficients)."""
    e = np.asarray(value, dtype=np.float64)
    if e.shape[-1:] != (4,):
        raise ValueError(f"{name}: expected shape (..., 4), got {e.shape}")
    if not np.all(np.isfinite(e)):
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return e


def corners_to_coefficients(corners: np.ndarray) -> np.ndarray:
    """``(..., 4)`` corner values ``(++, +-, -+, --)`` -> ``(..., 4)`` coefficients ``(a, b, c, d)``."""
    e = check_quads("corners", corners)
    pp, pm, mp, mm = e[..., 0], e[..., 1], e[..., 2], e[..., 3]
    return np.stack(
        [
            (pp + pm + mp + mm) / 4,
            (pp + pm - mp - mm) / 4,
            (pp - pm + mp - mm) / 4,
            (pp - pm - mp + mm) / 4,
        ],
        axis=-1,
    )


def softmax_corners(logits: np.ndarray) -> np.ndarray:
    """The paper's positivity map: corners ``4 softmax(logits)`` (> 0, mean 1)."""
    z = np.asarray(logits, dtype=np.float64)
    z = np.exp(z - z.max(-1, keepdims=True))
    return 4 * z / z.sum(-1, keepdims=True)


def ptt_kernel(coefficients: np.ndarray, alpha_h: float = 1.0, alpha_w: float = 1.0) -> np.ndarray:
    """``(..., 4)`` coefficients ``(a, b, c, d)`` -> ``(..., 3, 3)`` state kernel (cross-correlation).

    ``K[1 + dy, 1 + dx]`` multiplies ``x[i + dy, j + dx]``, as in ``conv2d`` with zero padding.
    """
    coef = check_quads("coefficients", coefficients)
    a, b, c, d = coef[..., 0], coef[..., 1], coef[..., 2], coef[..., 3]
    lh, uh = off_diagonals(alpha_h)
    lw, uw = off_diagonals(alpha_w)
    K = np.zeros((*coef.shape[:-1], 3, 3))
    K[..., 1, 1] = a
    K[..., 0, 1], K[..., 2, 1] = b / 2 * lh, b / 2 * uh
    K[..., 1, 0], K[..., 1, 2] = c / 2 * lw, c / 2 * uw
    K[..., 0, 0], K[..., 0, 2] = d / 4 * lh * lw, d / 4 * lh * uw
    K[..., 2, 0], K[..., 2, 2] = d / 4 * uh * lw, d / 4 * uh * uw
    return K


def closed_form_eigenvalues(coefficients: np.ndarray, H: int, W: int) -> np.ndarray:
    """``(..., 4)`` coefficients -> ``(..., H, W)`` eigenvalues ``eps(theta_m, phi_n)`` of the PTT operator."""
    coef = check_quads("coefficients", coefficients)
    check_grid("H", H)
    check_grid("W", W)
    ch = np.cos(np.arange(1, H + 1) * np.pi / (H + 1))[:, None]
    cw = np.cos(np.arange(1, W + 1) * np.pi / (W + 1))[None, :]
    a, b, c, d = (coef[..., i, None, None] for i in range(4))
    return a + b * ch + c * cw + d * ch * cw


def make_dplr_hippo(N: int) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues and eigenvectors of the normal part of HiPPO-LegS (HiPPO-N), as in S5/ConvS5.

    Returns ``Lambda`` ``(N,)`` complex (real parts all -1/2) and ``V`` ``(N, N)`` unitary.
    """
    if N < 2 or N % 2:
        raise ValueError(f"state_size: expected an even int >= 2 (conjugate pairs), got {N}")
    P = np.sqrt(1 + 2 * np.arange(N))
    A = P[:, None] * P[None, :]
    A = -(np.tril(A) - np.diag(np.arange(N)))  # -HiPPO-LegS
    p = np.sqrt(np.arange(N) + 0.5)
    S = A + p[:, None] * p[None, :]  # normal part
    Lambda_real = np.mean(np.diagonal(S)) * np.ones(N)
    Lambda_imag, V = np.linalg.eigh(S * -1j)
    return Lambda_real + 1j * Lambda_imag, V


def hippo_initializer(
    state_size: int, blocks: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ConvS5's initialisation: ``(Lambda (P,), V (2P, P), V_inv (P, 2P))`` with ``P = state_size // 2``.

    `blocks` copies of a HiPPO-N block of size ``state_size / blocks`` on the diagonal; only
    one eigenvalue of each conjugate pair is kept (outputs are ``2 Re(...)``).
    """
    if blocks < 1 or state_size % blocks or (state_size // blocks) % 2:
        raise ValueError(
            f"blocks: expected a divisor of state_size={state_size} leaving even blocks, got {blocks}"
        )
    block = state_size // blocks
    Lambda, V = make_dplr_hippo(block)
    half = block // 2
    Lambda, V = Lambda[:half], V[:, :half]
    from scipy.linalg import block_diag

    return (
        np.tile(Lambda, blocks),
        block_diag(*([V] * blocks)),
        block_diag(*([V.conj().T] * blocks)),
    )
