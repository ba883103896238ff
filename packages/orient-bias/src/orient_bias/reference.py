"""Slow, obviously-correct implementations: the oracles the tests compare the fast paths to.

One molecule at a time, explicit loops over atoms, no batching tricks.
"""

from __future__ import annotations

import math

import numpy as np

from orient_bias.frames import (
    ASYMMETRIC,
    LINEAR,
    OBLATE,
    PROLATE,
    SPHERICAL,
    atomic_masses,
)


def haar_rotation_reference(rng: np.random.Generator) -> np.ndarray:
    """One Haar rotation by QR of a Gaussian matrix (Mezzadri 2007), an independent sampler.

    Q R = G with the signs of diag(R) made positive gives Q Haar on O(3); right-multiplying
    by diag(1, 1, det Q) maps it onto SO(3) without changing the measure.
    """
    G = rng.standard_normal((3, 3))
    Q, Rr = np.linalg.qr(G)
    Q = Q * np.sign(np.diag(Rr))
    if np.linalg.det(Q) < 0:
        Q[:, 2] = -Q[:, 2]
    return Q


def _sign_reference(
    v: list[float], pts: list[list[float]], ws: list[float], scale: float, tol: float
) -> float:
    proj = [sum(v[k] * p[k] for k in range(3)) for p in pts]
    hi = max(proj)
    lo = max(-q for q in proj)
    if abs(hi - lo) > tol * scale:
        return 1.0 if hi > lo else -1.0
    m3 = sum(w * q**3 for w, q in zip(ws, proj, strict=True)) / sum(ws)
    if abs(m3) > tol * scale**3:
        return 1.0 if m3 > 0 else -1.0
    top = max(abs(t) for t in v)
    best = next(k for k in range(3) if abs(v[k]) >= top - tol)
    return -1.0 if v[best] < 0 else 1.0


def _cross(a: list[float], b: list[float]) -> list[float]:
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def _in_plane_reference(u: list[float], tol: float) -> list[float]:
    low = min(abs(t) for t in u)
    k = next(j for j in range(3) if abs(u[j]) <= low + tol)
    e = [1.0 if j == k else 0.0 for j in range(3)]
    d = sum(e[j] * u[j] for j in range(3))
    a = [e[j] - d * u[j] for j in range(3)]
    n = math.sqrt(sum(t * t for t in a))
    return [t / n for t in a]


def principal_frame_reference(
    positions: np.ndarray, numbers: np.ndarray, weighting: str = "none", tol: float = 1e-4
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(axes (3, 3), eigenvalues (3,), kind)`` of ONE molecule, by the policy of `frames`."""
    n = len(numbers)
    ws = (
        [1.0] * n if weighting == "none" else [float(m) for m in atomic_masses(np.asarray(numbers))]
    )
    W = sum(ws)
    c = [sum(ws[i] * positions[i][k] for i in range(n)) / W for k in range(3)]
    pts = [[positions[i][k] - c[k] for k in range(3)] for i in range(n)]
    S = np.zeros((3, 3))
    for i in range(n):
        for r in range(3):
            for c2 in range(3):
                S[r, c2] += ws[i] * pts[i][r] * pts[i][c2] / W
    evals, V = np.linalg.eigh(S)
    order = [2, 1, 0]
    lam = [max(float(evals[j]), 0.0) for j in order]
    vecs = [[float(V[k, j]) for k in range(3)] for j in order]
    scale = math.sqrt(lam[0])
    r12, r23 = (lam[0] - lam[1]) / lam[0], (lam[1] - lam[2]) / lam[0]
    if r12 <= tol and r23 <= tol:
        return np.eye(3), np.array(lam), SPHERICAL
    if r12 <= tol:
        u = [_sign_reference(vecs[2], pts, ws, scale, tol) * t for t in vecs[2]]
        a = _in_plane_reference(u, tol)
        return np.array([a, _cross(u, a), u]), np.array(lam), OBLATE
    if r23 <= tol:
        u = [_sign_reference(vecs[0], pts, ws, scale, tol) * t for t in vecs[0]]
        a = _in_plane_reference(u, tol)
        kind = LINEAR if lam[1] / lam[0] <= tol else PROLATE
        return np.array([u, a, _cross(u, a)]), np.array(lam), kind
    v1 = [_sign_reference(vecs[0], pts, ws, scale, tol) * t for t in vecs[0]]
    v2 = [_sign_reference(vecs[1], pts, ws, scale, tol) * t for t in vecs[1]]
    return np.array([v1, v2, _cross(v1, v2)]), np.array(lam), ASYMMETRIC


def pair_auc_reference(s0: np.ndarray, s1: np.ndarray) -> float:
    """ROC-AUC of scores s1 (positives) vs s0 (negatives) by counting all pairs, ties as 1/2."""
    wins = 0.0
    for a in s1:
        for b in s0:
            wins += 1.0 if a > b else 0.5 if a == b else 0.0
    return wins / (len(s0) * len(s1))


def knn_kl_reference(angles_to_others: np.ndarray, k: int = 5) -> float:
    """k-NN KL(p || Haar) from a full (N, N) matrix of geodesic angles (diagonal ignored)."""
    from scipy.special import digamma

    N = len(angles_to_others)
    logs = []
    for i in range(N):
        row = sorted(float(angles_to_others[i, j]) for j in range(N) if j != i)
        t = max(row[k - 1], 1e-12)
        logs.append(math.log(8 * math.pi * (t - math.sin(t))))
    H = float(digamma(N) - digamma(k)) + sum(logs) / N
    return math.log(8 * math.pi**2) - H
