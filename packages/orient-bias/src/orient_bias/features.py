"""Orientation features of a pose for the "original vs rotated" classifier (finding 1).

All features are translation-invariant (the pose is centred first), so the classifier
sees only orientation, not the position of the centroid, which QM9 also leaks.
"""

from __future__ import annotations

import numpy as np

from orient_bias.frames import Frames, Poses, principal_frames
from orient_bias.rotations import rotation_6d

__all__ = ["FEATURE_NAMES", "orientation_features"]

FEATURE_NAMES = (
    *(f"pc1_{a}" for a in "xyz"),
    *(f"pc2_{a}" for a in "xyz"),
    "S_xx", "S_yy", "S_zz", "S_xy", "S_xz", "S_yz",
    "lambda2/lambda1", "lambda3/lambda1",
)  # fmt: skip
"""Columns of `orientation_features`: the sign-fixed principal axes PC1, PC2 in lab coordinates
(the 6D representation of the frame), the lab-frame second-moment matrix S divided by tr S
(the orientation of the inertia ellipsoid without the sign ambiguity), and two invariant
shape ratios as context (alone they carry no orientation and score chance)."""


def orientation_features(
    poses: Poses, frames: Frames | None = None, weighting: str = "none"
) -> np.ndarray:
    """``(B, 14)`` float64 features, columns as in `FEATURE_NAMES`."""
    fr = principal_frames(poses, weighting=weighting) if frames is None else frames
    if len(fr.axes) != len(poses):
        raise ValueError(f"frames: expected {len(poses)} frames like poses, got {len(fr.axes)}")
    lam = fr.eigenvalues
    # S = axesᵀ diag(λ) axes, rebuilt from the frame to avoid a second pass over atoms
    S = np.matmul(np.swapaxes(fr.axes, 1, 2) * lam[:, None, :], fr.axes) / lam.sum(1)[:, None, None]
    iu = ([0, 1, 2, 0, 0, 1], [0, 1, 2, 1, 2, 2])
    return np.concatenate(
        [
            rotation_6d(fr.axes),
            S[:, iu[0], iu[1]],
            (lam[:, 1:] / lam[:, :1]),
        ],
        axis=1,
    )
