"""The spatial construction: PTT kernels, closed-form spectra, sine bases, HiPPO-N."""

from __future__ import annotations

import numpy as np
import pytest
from convt3.reference import explicit_operator
from convt3.spectral import (
    check_grid,
    closed_form_eigenvalues,
    corners_to_coefficients,
    hippo_initializer,
    make_dplr_hippo,
    off_diagonals,
    ptt_kernel,
    sine_basis,
    softmax_corners,
    tridiagonal_toeplitz,
)

GRIDS = [(1, 1), (2, 3), (4, 4), (5, 7), (8, 6)]
ALPHAS = [(1.0, 1.0), (0.5, 2.0), (1.3, 0.8)]


@pytest.mark.parametrize("H,W", GRIDS)
@pytest.mark.parametrize("alpha_h,alpha_w", ALPHAS)
def test_closed_form_eigenvalues_equal_eigvals_of_the_explicit_operator(H, W, alpha_h, alpha_w):
    rng = np.random.default_rng(H * 10 + W)
    coef = rng.standard_normal(4)
    M = explicit_operator(ptt_kernel(coef, alpha_h, alpha_w), H, W)
    numeric = np.sort_complex(np.linalg.eigvals(M))
    closed = np.sort_complex(closed_form_eigenvalues(coef, H, W).ravel().astype(complex))
    np.testing.assert_allclose(numeric, closed, atol=1e-10)


@pytest.mark.parametrize("H,W", GRIDS)
@pytest.mark.parametrize("alpha_h,alpha_w", ALPHAS)
def test_sine_basis_diagonalises_the_operator_and_round_trips(H, W, alpha_h, alpha_w):
    rng = np.random.default_rng(3)
    coef = rng.standard_normal(4)
    Qh, Qh_inv, _ = sine_basis(H, alpha_h)
    Qw, Qw_inv, _ = sine_basis(W, alpha_w)
    np.testing.assert_allclose(Qh_inv @ Qh, np.eye(H), atol=1e-12)
    np.testing.assert_allclose(Qw @ Qw_inv, np.eye(W), atol=1e-12)
    x = rng.standard_normal((H, W))
    z = Qh_inv @ x @ Qw_inv.T
    np.testing.assert_allclose(Qh @ z @ Qw.T, x, atol=1e-12)
    # the operator acts on the eigenbasis coefficients by the closed-form eigenvalues
    M = explicit_operator(ptt_kernel(coef, alpha_h, alpha_w), H, W)
    eps = closed_form_eigenvalues(coef, H, W)
    np.testing.assert_allclose(
        Qh_inv @ (M @ x.ravel()).reshape(H, W) @ Qw_inv.T, eps * z, atol=1e-10
    )


def test_kernel_is_the_kronecker_sum_of_tridiagonal_toeplitz_matrices():
    a, b, c, d = 0.7, -0.3, 0.45, 0.2
    H, W, ah, aw = 4, 5, 1.7, 0.6
    lh, uh = off_diagonals(ah)
    lw, uw = off_diagonals(aw)
    Th, Tw = tridiagonal_toeplitz(H, lh, 0, uh), tridiagonal_toeplitz(W, lw, 0, uw)
    expected = (
        a * np.eye(H * W) + b / 2 * np.kron(Th, np.eye(W)) + c / 2 * np.kron(np.eye(H), Tw)
        + d / 4 * np.kron(Th, Tw)
    )  # fmt: skip
    np.testing.assert_allclose(explicit_operator(ptt_kernel([a, b, c, d], ah, aw), H, W), expected)
    assert lh / uh == pytest.approx(ah) and lh * uh == pytest.approx(1.0)


def test_corner_values_are_the_spectrum_at_the_corners_and_positive_corners_give_positive_spectra():
    rng = np.random.default_rng(0)
    corners = softmax_corners(3 * rng.standard_normal((50, 4)))
    assert (corners > 0).all()
    np.testing.assert_allclose(corners.mean(-1), 1.0)
    coef = corners_to_coefficients(corners)
    a, b, c, d = coef.T
    for i, (s, t) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]):
        np.testing.assert_allclose(a + b * s + c * t + d * s * t, corners[:, i], atol=1e-12)
    assert (closed_form_eigenvalues(coef, 9, 11) > 0).all()


def test_grid_checks_name_the_problem():
    with pytest.raises(ValueError, match="grid size >= 1, got 0"):
        check_grid("height", 0)
    with pytest.raises(TypeError, match="expected an int grid size"):
        check_grid("height", 4.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="condition number"):
        check_grid("width", 64, alpha=4.0)
    with pytest.raises(ValueError, match="l/u > 0"):
        sine_basis(4, alpha=-1.0)
    assert check_grid("width", 64, alpha=1.0) == 64
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 4\)"):
        corners_to_coefficients(np.ones(3))


def test_hippo_initializer_matches_the_normal_hippo_matrix():
    Lambda, V = make_dplr_hippo(8)
    np.testing.assert_allclose(Lambda.real, -0.5)
    np.testing.assert_allclose(V.conj().T @ V, np.eye(8), atol=1e-12)
    n = np.arange(8)
    P = np.sqrt(1 + 2 * n)
    hippo = -(np.tril(P[:, None] * P[None, :]) - np.diag(n))
    p = np.sqrt(n + 0.5)
    normal = hippo + p[:, None] * p[None, :]
    np.testing.assert_allclose(V @ np.diag(Lambda) @ V.conj().T, normal, atol=1e-10)
    L, V2, V2_inv = hippo_initializer(16, blocks=2)
    assert L.shape == (8,) and V2.shape == (16, 8) and V2_inv.shape == (8, 16)
    with pytest.raises(ValueError, match="even"):
        make_dplr_hippo(5)
    with pytest.raises(ValueError, match="blocks"):
        hippo_initializer(16, blocks=3)
