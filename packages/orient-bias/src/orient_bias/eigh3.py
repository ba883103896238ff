"""Eigen-decomposition of a batch of symmetric 3x3 matrices, vectorised over the batch.

``np.linalg.eigh`` on a ``(B, 3, 3)`` stack calls LAPACK once per matrix (about 0.9 µs each
on one thread): for QM9-sized batches it was the largest single cost of `principal_frames`.
Here the cyclic Jacobi method runs on the six distinct entries as ``(B,)`` arrays, so each
step is a handful of NumPy operations over the whole batch.

Rotation of the pair (p, q) (Golub & Van Loan, *Matrix Computations*, §8.5.2): with
``d = a_qq - a_pp``, ``t = tan φ = sgn(d) · 2 a_pq / (|d| + sqrt(d² + 4 a_pq²))`` (the
smaller root, |φ| <= π/4; t = 1 when d = 0), ``c = 1/sqrt(1 + t²)``, ``s = t c``:

    a_pp -= t a_pq,  a_qq += t a_pq,  a_pq = 0,
    a_rp, a_rq = c a_rp - s a_rq, s a_rp + c a_rq,   V[:, p], V[:, q] likewise.

A sweep rotates (0, 1), (0, 2), (1, 2); convergence is quadratic, so a QM9 batch needs four
sweeps for an off-diagonal norm below 1e-15 of the trace. Matrices not converged after
`MAX_SWEEPS` (none seen) are handed to ``np.linalg.eigh``, so the result never depends on
the cap. Eigenvalues are accurate to a few ulps of the matrix norm, like LAPACK's.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_SWEEPS", "eigh3"]

MAX_SWEEPS = 10
_PAIRS = ((0, 1, 2), (0, 2, 1), (1, 2, 0))  # (p, q, r): rotate p and q, r is the third index
_TOL = 1e-15  # off-diagonal Frobenius norm relative to |trace| (or the diagonal's norm)


def eigh3(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues ``(B, 3)`` in DEcreasing order and eigenvectors ``(B, 3, 3)`` (column k
    belongs to eigenvalue k) of symmetric ``S`` ``(B, 3, 3)``; only the upper triangle is
    read. Signs of the eigenvectors are arbitrary (as LAPACK's); the columns are orthonormal.
    """
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 3 or S.shape[1:] != (3, 3):
        raise ValueError(f"S: expected shape (B, 3, 3), got {S.shape}")
    n = len(S)
    a = [[S[:, min(i, j), max(i, j)].copy() for j in range(3)] for i in range(3)]
    v = [[np.full(n, float(i == k)) for k in range(3)] for i in range(3)]  # v[i][k] = V[:, i, k]
    size = np.sqrt(a[0][0] ** 2 + a[1][1] ** 2 + a[2][2] ** 2 + a[0][1] ** 2 + a[0][2] ** 2
                   + a[1][2] ** 2)  # fmt: skip
    for sweep in range(MAX_SWEEPS + 1):
        off = np.sqrt(a[0][1] ** 2 + a[0][2] ** 2 + a[1][2] ** 2)
        done = off <= _TOL * size
        if done.all() or sweep == MAX_SWEEPS:
            break
        for p, q, r in _PAIRS:
            apq, app, aqq = a[p][q], a[p][p], a[q][q]
            d = aqq - app
            t = 2 * apq / (np.abs(d) + np.hypot(d, 2 * apq) + np.finfo(np.float64).tiny)
            t = np.where(d < 0, -t, t)
            c = 1 / np.sqrt(1 + t * t)
            s = t * c
            a[p][p], a[q][q] = app - t * apq, aqq + t * apq
            a[p][q] = a[q][p] = np.zeros(n)
            arp, arq = a[r][p], a[r][q]
            a[r][p] = a[p][r] = c * arp - s * arq
            a[r][q] = a[q][r] = s * arp + c * arq
            for i in range(3):
                vp, vq = v[i][p], v[i][q]
                v[i][p], v[i][q] = c * vp - s * vq, s * vp + c * vq
    lam = np.stack([a[0][0], a[1][1], a[2][2]], 1)  # (B, 3)
    V = np.stack([np.stack(row, 1) for row in v], 1)  # (B, 3, 3)
    if not done.all():  # beyond the cap: LAPACK for those matrices
        bad = np.flatnonzero(~done)
        lam[bad], V[bad] = np.linalg.eigh(S[bad], UPLO="U")
    return _sort_descending(lam, V)


def _sort_descending(lam: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order each row's eigenvalues (and V's columns with them) from largest to smallest, in
    place, by three compare-swaps (an ``argsort`` over rows of three is slower)."""
    for i, j in ((0, 1), (1, 2), (0, 1)):
        swap = lam[:, i] < lam[:, j]
        if swap.any():
            lam[swap, i], lam[swap, j] = lam[swap, j], lam[swap, i].copy()
            V[swap, :, i], V[swap, :, j] = V[swap, :, j], V[swap, :, i].copy()
    return lam, V
