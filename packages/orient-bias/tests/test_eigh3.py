"""The batched Jacobi eigensolver against LAPACK, on random, degenerate and scaled matrices."""

from __future__ import annotations

import numpy as np
import pytest
from orient_bias import eigh3 as module
from orient_bias.eigh3 import eigh3


def _check(S: np.ndarray, lam: np.ndarray, V: np.ndarray) -> None:
    norm = np.linalg.norm(S, axis=(1, 2))[:, None, None]
    assert np.all(np.diff(lam, axis=1) <= 0), "eigenvalues not in decreasing order"
    np.testing.assert_allclose(np.matmul(S, V) / norm, V * lam[:, None, :] / norm, atol=1e-14)
    np.testing.assert_allclose(
        np.matmul(np.swapaxes(V, 1, 2), V), np.broadcast_to(np.eye(3), S.shape), atol=1e-14
    )
    ref = np.linalg.eigvalsh(S)[:, ::-1]
    np.testing.assert_allclose(lam / norm[..., 0], ref / norm[..., 0], atol=1e-14)


def test_random_symmetric_matrices_match_lapack():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(500, 3, 3))
    S = A + np.swapaxes(A, 1, 2)  # indefinite too
    lam, V = eigh3(S)
    _check(S, lam, V)
    _, W = np.linalg.eigh(S)  # same eigenvectors up to sign (eigenvalues are distinct here)
    np.testing.assert_allclose(np.abs((V * W[:, :, ::-1]).sum(1)), 1.0, atol=1e-12)


@pytest.mark.parametrize("diag", [[2.0, 1.0, 1.0], [1.0, 1.0, 1.0], [2.0, 2.0, 1.0], [1.0, 0.0, 0.0],
                                  [0.0, 0.0, 0.0], [1.0, 1.0 + 1e-13, 0.5], [1e6, 1.0, 1e-6]])  # fmt: skip
def test_degenerate_and_ill_scaled_spectra(diag):
    rng = np.random.default_rng(1)
    R = np.linalg.qr(rng.normal(size=(20, 3, 3)))[0]
    S = R @ np.diag(diag) @ np.swapaxes(R, 1, 2)
    S = (S + np.swapaxes(S, 1, 2)) / 2
    lam, V = eigh3(S)
    if np.any(diag):
        _check(S, lam, V)
    np.testing.assert_allclose(
        lam, np.broadcast_to(sorted(diag, reverse=True), lam.shape), atol=1e-9 * max(diag) + 1e-300
    )


def test_reads_only_the_upper_triangle():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(50, 3, 3))
    S = A + np.swapaxes(A, 1, 2)
    lam, _ = eigh3(np.triu(S))
    np.testing.assert_allclose(lam, eigh3(S)[0], atol=0)


def test_beyond_the_sweep_cap_falls_back_to_lapack(monkeypatch):
    monkeypatch.setattr(module, "MAX_SWEEPS", 1)  # one sweep cannot converge random matrices
    rng = np.random.default_rng(3)
    A = rng.normal(size=(40, 3, 3))
    S = A + np.swapaxes(A, 1, 2)
    lam, V = eigh3(S)
    _check(S, lam, V)


def test_bad_shape_names_the_argument():
    with pytest.raises(ValueError, match=r"S: expected shape \(B, 3, 3\)"):
        eigh3(np.zeros((4, 2, 2)))
