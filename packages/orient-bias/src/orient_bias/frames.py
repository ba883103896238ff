"""Padded molecule batches and each pose's orientation relative to its principal-axes frame.

The frame (paper §2, official ``orientations.py``): centre the atoms, form the 3x3
second-moment matrix, take its eigenvectors sorted by decreasing eigenvalue
(PC1, PC2, PC3) and fix their signs. Unweighted this is PCA of the positions (the paper's
default); mass-weighted it is the inertia frame, since the inertia tensor
I = tr(S)·1 - S shares S's eigenvectors (in reverse order).

Everything is vectorised over a padded batch ``(B, N, 3)``: no Python loop per atom or
per molecule.

Deterministic policy (``tol`` is relative to the largest eigenvalue λ1):

1. **Sign of PC1 and PC2** (the paper's "max" rule): the atom with the largest
   ``|projection|`` lies on the positive side. A tie (``|max⁺ - max⁻| <= tol·sqrt(λ1)``,
   e.g. a centrosymmetric molecule) is broken by the sign of the third moment
   ``Σ w p³``; if that vanishes too, by the **lab rule**: the largest-magnitude lab
   component of the axis is made positive (lowest index among components within ``tol``
   of the largest). The paper breaks exact ties at random instead.

2. **Handedness:** PC3 = PC1 × PC2, so the frame is a proper rotation (det +1).
3. **Degenerate eigenvalues** (``(λi - λj)/λ1 <= tol``) leave the axes inside the
   degenerate subspace undefined by the molecule; they are taken from the lab frame:

   - ``PROLATE`` (λ2 ≈ λ3, incl. ``LINEAR`` where λ2 ≈ λ3 ≈ 0): PC1 is the unique axis,
     sign by rule 1; PC2 is the normalised projection of the lab axis e_k most
     orthogonal to PC1 (smallest ``|PC1_k|``, lowest k among components within ``tol``
     of the smallest); PC3 = PC1 × PC2.
   - ``OBLATE`` (λ1 ≈ λ2): PC3 (the normal) is the unique axis, sign by rule 1;
     PC1 is the projection of the lab axis most orthogonal to PC3; PC2 = PC3 × PC1.
   - ``SPHERICAL`` (all three equal): the lab frame itself, axes = identity.

   Such frames say nothing about the molecule's pose; `Frames.kind` flags them.

Every tie is decided with a tolerance, so a pose and the same pose moved by 1e-12 Å get the
same frame unless a molecule sits within ~1e-12 of a tolerance boundary itself (e.g.
``|max⁺ - max⁻|`` exactly ``tol·sqrt(λ1)``); on all of QM9 none does (tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from orient_bias.eigh3 import eigh3
from shared_core.data import ATOMIC_MASSES, Molecule

__all__ = [
    "ASYMMETRIC",
    "KIND_NAMES",
    "LINEAR",
    "OBLATE",
    "PROLATE",
    "SPHERICAL",
    "Frames",
    "Poses",
    "atomic_masses",
    "authors_frames",
    "centre",
    "pad",
    "principal_frames",
]

ASYMMETRIC, PROLATE, OBLATE, SPHERICAL, LINEAR = 0, 1, 2, 3, 4
KIND_NAMES = ("asymmetric", "prolate", "oblate", "spherical", "linear")


def atomic_masses(numbers: np.ndarray) -> np.ndarray:
    """Atomic masses (u) for an integer array of atomic numbers; 0 (padding) maps to 0.

    The table is `shared_core.data.ATOMIC_MASSES`.
    """
    z = np.asarray(numbers)
    if z.dtype.kind not in "iu":
        raise TypeError(f"numbers: expected an integer array of atomic numbers, got {z.dtype}")
    if np.any(z < 0) or np.any(z >= len(ATOMIC_MASSES)):
        raise ValueError(
            f"numbers: expected atomic numbers in 0..{len(ATOMIC_MASSES) - 1}, got values in "
            f"{int(z.min())}..{int(z.max())}"
        )
    return ATOMIC_MASSES[z]


@dataclass
class Poses:
    """A padded batch of poses.

    positions: ``(B, N, 3)`` float64 in Å; numbers: ``(B, N)`` int64 atomic numbers with
    0 marking padding (padding positions are 0); names: ``(B,)`` identifiers.
    """

    positions: np.ndarray
    numbers: np.ndarray
    names: np.ndarray

    def __post_init__(self) -> None:
        pos, num = np.asarray(self.positions), np.asarray(self.numbers)
        if pos.dtype.kind not in "iuf":
            raise TypeError(f"positions: expected a real-valued array in Å, got dtype {pos.dtype}")
        if num.dtype.kind not in "iu" and not (
            num.dtype.kind == "f" and np.all(np.isfinite(num)) and np.all(num == np.round(num))
        ):
            raise TypeError(f"numbers: expected integer atomic numbers, got dtype {num.dtype}")
        self.positions = pos.astype(np.float64, copy=False)
        self.numbers = num.astype(np.int64, copy=False)
        if self.positions.ndim != 3 or self.positions.shape[2] != 3:
            raise ValueError(f"positions: expected shape (B, N, 3), got {self.positions.shape}")
        if self.numbers.shape != self.positions.shape[:2]:
            raise ValueError(
                f"numbers: expected shape {self.positions.shape[:2]} to match positions, "
                f"got {self.numbers.shape}"
            )
        self.names = np.asarray(self.names)
        if self.names.shape != (len(self.positions),):
            raise ValueError(
                f"names: expected shape ({len(self.positions)},), got {self.names.shape}"
            )
        if not np.all(np.isfinite(self.positions)):
            bad = np.flatnonzero(~np.isfinite(self.positions).all(axis=(1, 2)))
            raise ValueError(
                f"positions: NaN or infinite coordinates in molecules {bad[:10].tolist()}"
            )
        if np.any(self.numbers < 0):
            raise ValueError("numbers: atomic numbers must be >= 0 (0 marks padding)")

    @property
    def mask(self) -> np.ndarray:
        """``(B, N)`` True where an atom is present."""
        return self.numbers > 0

    @property
    def n_atoms(self) -> np.ndarray:
        return self.mask.sum(1)

    def __len__(self) -> int:
        return len(self.positions)

    def subset(self, index: Any) -> Poses:
        return Poses(self.positions[index], self.numbers[index], self.names[index])

    def rotated(self, R: np.ndarray) -> Poses:
        """Each molecule b rotated by ``R[b]`` (``x' = R x``) about the lab origin."""
        R = np.asarray(R, dtype=np.float64)
        if R.shape != (len(self), 3, 3):
            raise ValueError(f"R: expected shape ({len(self)}, 3, 3), got {R.shape}")
        return Poses(np.matmul(self.positions, np.swapaxes(R, 1, 2)), self.numbers, self.names)


def pad(molecules: list[Molecule], n_max: int | None = None) -> Poses:
    """Stack `Molecule` records into a zero-padded `Poses` batch (one concatenation, no atom loop)."""
    if len(molecules) == 0:
        raise ValueError("molecules: expected at least one molecule")
    bad = [i for i, m in enumerate(molecules) if not isinstance(m, Molecule)]
    if bad:
        raise TypeError(
            f"molecules: expected shared_core.data.Molecule records, got "
            f"{type(molecules[bad[0]]).__name__} at index {bad[0]}"
        )
    if n_max is not None and (isinstance(n_max, bool) or not isinstance(n_max, int) or n_max < 1):
        raise ValueError(f"n_max: expected a positive int or None, got {n_max!r}")
    counts = np.array([len(m) for m in molecules])
    width = int(counts.max()) if n_max is None else n_max
    if counts.max() > width:
        raise ValueError(f"n_max: {n_max} is smaller than the largest molecule ({counts.max()})")
    b = np.repeat(np.arange(len(molecules)), counts)
    j = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    pos = np.zeros((len(molecules), width, 3))
    num = np.zeros((len(molecules), width), dtype=np.int64)
    pos[b, j] = np.concatenate([m.positions for m in molecules])
    num[b, j] = np.concatenate([m.numbers for m in molecules])
    return Poses(pos, num, np.array([m.name for m in molecules]))


def _weights(poses: Poses, weighting: str) -> np.ndarray:
    if weighting == "none":
        return poses.mask.astype(np.float64)
    if weighting == "mass":
        return atomic_masses(poses.numbers)
    raise ValueError(f"weighting: expected 'none' or 'mass', got {weighting!r}")


def centre(poses: Poses, weighting: str = "none") -> Poses:
    """Subtract each molecule's centroid (``weighting="mass"``: centre of mass); padding stays 0."""
    w = _weights(poses, weighting)
    c = np.matmul(w[:, None, :], poses.positions)[:, 0] / w.sum(1, keepdims=True)
    x = (poses.positions - c[:, None, :]) * poses.mask[..., None]
    return Poses(x, poses.numbers, poses.names)


@dataclass
class Frames:
    """Principal-axes frames of a batch.

    axes: ``(B, 3, 3)``, row k is PC(k+1) in lab coordinates (the paper's per-molecule
    rotation matrix); eigenvalues: ``(B, 3)`` λ1 >= λ2 >= λ3 of the (weighted) second-moment
    matrix in Å²; kind: ``(B,)`` one of ASYMMETRIC, PROLATE, OBLATE, SPHERICAL, LINEAR;
    centroid: ``(B, 3)``.

    The canonical pose is ``y = (x - centroid) @ axes.T`` and the pose is recovered as
    ``x - centroid = y @ axes``, i.e. ``rotation = axes.T`` maps the canonical pose to it.
    """

    axes: np.ndarray
    eigenvalues: np.ndarray
    kind: np.ndarray
    centroid: np.ndarray

    @property
    def rotation(self) -> np.ndarray:
        """``(B, 3, 3)``: the rotation taking the canonical pose to the given pose (``axesᵀ``)."""
        return np.swapaxes(self.axes, 1, 2)

    def canonical(self, poses: Poses) -> np.ndarray:
        """Positions in the principal frame, ``(B, N, 3)`` (padding stays 0)."""
        x = (poses.positions - self.centroid[:, None, :]) * poses.mask[..., None]
        return np.einsum("bij,bnj->bni", self.axes, x)


def _lab_sign(v: np.ndarray, tol: float) -> np.ndarray:
    """+1/-1 per row so that the largest-magnitude component of ``v`` (..., 3) is positive;
    components within `tol` of the largest count as tied, and the lowest index wins (so a
    pose 1e-12 away from a tie gets the same sign)."""
    a = np.abs(v)
    k = (a >= a.max(-1, keepdims=True) - tol).argmax(-1)  # first index within tol of the max
    return np.where(np.take_along_axis(v, k[..., None], -1)[..., 0] < 0, -1.0, 1.0)


def _axis_signs(
    V: np.ndarray, xt: np.ndarray, w: np.ndarray, wsum: np.ndarray, scale: np.ndarray, tol: float
) -> np.ndarray:
    """``(B, 3)`` sign of each axis (columns of ``V`` (B, 3, 3)) by rule 1, for all molecules.

    ``xt`` is the centred batch transposed, ``(B, 3, N)``. The projections of all atoms on
    all three axes are ONE batched matmul, laid out ``(B, 3, N)`` so the reductions run
    over contiguous atoms (reducing the middle axis of ``(B, N, 3)`` is ~6x slower).
    Padding atoms sit at the origin and project to 0; the weighted projections of a
    centred molecule sum to zero, so its largest projection and its largest negated one
    are both >= 0, and padding never changes the maxima: no mask is needed. The third
    moment and the lab rule are computed only for the molecules with a tie (a few percent).
    """
    P = np.matmul(np.swapaxes(V, 1, 2), xt)  # (B, 3, N): p_kn = v_k · x_n
    hi, lo = P.max(-1), -P.min(-1)
    signs = np.where(hi >= lo, 1.0, -1.0)
    tie = np.abs(hi - lo) <= tol * scale[:, None]
    b = np.flatnonzero(tie.any(1))
    if len(b):
        Pb, sb = P[b], scale[b, None]
        m3 = np.matmul(Pb * Pb * Pb, w[b, :, None])[..., 0] / wsum[b, None]  # Σ w p³ / Σ w
        s_m3 = np.where(m3 >= 0, 1.0, -1.0)
        s_lab = _lab_sign(np.swapaxes(V[b], 1, 2), tol)
        signs[b] = np.where(tie[b], np.where(np.abs(m3) <= tol * sb**3, s_lab, s_m3), signs[b])
    return signs


def _in_plane(u: np.ndarray, tol: float) -> np.ndarray:
    """Projection of the lab axis most orthogonal to unit ``u`` (B, 3), normalised; components
    within `tol` of the smallest count as tied and the lowest index wins."""
    a = np.abs(u)
    k = (a <= a.min(-1, keepdims=True) + tol).argmax(-1)
    e = np.eye(3)[k]
    a = e - (e * u).sum(-1, keepdims=True) * u
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def principal_frames(poses: Poses, weighting: str = "none", tol: float = 1e-4) -> Frames:
    """The principal-axes frame of every pose, with the module's deterministic policy.

    weighting: ``"none"`` (PCA of positions, the paper's default) or ``"mass"`` (inertia
    frame). tol: relative tolerance for degenerate eigenvalues and sign ties.
    Raises ValueError if a molecule has fewer than 2 atoms or all atoms coincide.
    """
    if not isinstance(poses, Poses):
        raise TypeError(f"poses: expected a Poses batch (see `pad`), got {type(poses).__name__}")
    if isinstance(tol, bool) or not (isinstance(tol, float | int) and 0 < tol < 1):
        raise ValueError(f"tol: expected a number in (0, 1), got {tol!r}")
    if len(poses) == 0:
        raise ValueError("poses: expected at least one molecule, got an empty batch")
    mask = poses.mask
    small = np.flatnonzero(mask.sum(1) < 2)
    if len(small):
        raise ValueError(
            f"poses: molecules {small[:10].tolist()} have fewer than 2 atoms; "
            "a single atom has no orientation"
        )
    w = _weights(poses, weighting)  # (B, N), 0 on padding
    wsum = w.sum(1)
    c = np.matmul(w[:, None, :], poses.positions)[:, 0] / wsum[:, None]  # (B, 3) centroid
    # the centred batch laid out (B, 3, N): every later reduction runs over contiguous atoms
    xt = np.ascontiguousarray(np.swapaxes(poses.positions, 1, 2))
    xt -= c[:, :, None]
    xt *= mask[:, None, :]  # padding back at the origin
    wxt = xt if weighting == "none" else xt * w[:, None, :]  # unweighted: w is the mask
    # S = Σ w x xᵀ / Σ w as one batched matmul (a 3-operand einsum is ~3x slower)
    S = np.matmul(wxt, np.swapaxes(xt, 1, 2)) / wsum[:, None, None]
    lam, V = eigh3(S)  # decreasing; columns of V are the eigenvectors
    lam = np.maximum(lam, 0.0)
    if np.any(lam[:, 0] <= 1e-20):
        bad = np.flatnonzero(lam[:, 0] <= 1e-20)
        raise ValueError(f"poses: all atoms coincide in molecules {bad[:10].tolist()}")
    scale = np.sqrt(lam[:, 0])
    rel12 = (lam[:, 0] - lam[:, 1]) / lam[:, 0]
    rel23 = (lam[:, 1] - lam[:, 2]) / lam[:, 0]
    kind = np.full(len(poses), ASYMMETRIC, dtype=np.int64)
    kind[rel23 <= tol] = PROLATE
    kind[(rel23 <= tol) & (lam[:, 1] / lam[:, 0] <= tol)] = LINEAR
    kind[rel12 <= tol] = OBLATE
    kind[(rel12 <= tol) & (rel23 <= tol)] = SPHERICAL

    signed = np.swapaxes(V * _axis_signs(V, xt, w, wsum, scale, tol)[:, None, :], 1, 2)
    pc1, pc2, pc3 = signed[:, 0], signed[:, 1], signed[:, 2]  # rows: signed axes, (B, 3) each
    axes = np.stack([pc1, pc2, np.cross(pc1, pc2)], 1)  # asymmetric tops
    pro = (kind == PROLATE) | (kind == LINEAR)
    if pro.any():  # unique axis PC1; PC2 from the lab
        u = pc1[pro]
        a = _in_plane(u, tol)
        axes[pro] = np.stack([u, a, np.cross(u, a)], 1)
    obl = kind == OBLATE
    if obl.any():  # unique normal PC3; PC1 from the lab
        u = pc3[obl]
        a = _in_plane(u, tol)
        axes[obl] = np.stack([a, np.cross(u, a), u], 1)
    axes[kind == SPHERICAL] = np.eye(3)
    return Frames(axes=axes, eigenvalues=lam, kind=kind, centroid=c)


def authors_frames(poses: Poses) -> np.ndarray:
    """``(B, 3, 3)`` principal axes by the official code's rule alone, for comparison.

    ``mol_aligned/orientations.py::compute_pca_batched`` (unweighted, ``"max"``): PC1 and
    PC2 point to the atom with the largest ``|projection|`` however close the runner-up is,
    PC3 makes the frame right-handed; no tie tolerance and no degenerate-top policy (an
    exact tie, sign 0, is broken at random there; here it counts as positive).
    `principal_frames` differs only where its ``tol`` declares a tie or a degeneracy.
    """
    if not isinstance(poses, Poses):
        raise TypeError(f"poses: expected a Poses batch (see `pad`), got {type(poses).__name__}")
    mask = poses.mask[..., None]
    n = np.maximum(mask.sum(1), 1)
    x = (poses.positions - (poses.positions * mask).sum(1)[:, None] / n[:, None]) * mask
    _, V = np.linalg.eigh(np.matmul(np.swapaxes(x, 1, 2), x) / n[..., None])
    V = V[:, :, ::-1]  # columns by decreasing eigenvalue
    P = np.matmul(x, V)  # (B, N, 3) projections
    V = V * np.where(P.max(1) >= -P.min(1), 1.0, -1.0)[:, None, :]
    axes = np.swapaxes(V, 1, 2).copy()
    axes[:, 2] = np.cross(axes[:, 0], axes[:, 1])
    return axes
