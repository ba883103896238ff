from __future__ import annotations

import numpy as np
from conftest import asymmetric_molecule
from orient_bias.features import FEATURE_NAMES, orientation_features
from orient_bias.frames import centre, pad
from orient_bias.rotations import random_rotations


def test_shape_names_and_invariances():
    poses = pad([asymmetric_molecule(s) for s in range(25)])
    F = orientation_features(poses)
    assert F.shape == (25, len(FEATURE_NAMES)) and F.dtype == np.float64
    # translation-invariant
    shifted = type(poses)(poses.positions + 7.0 * poses.mask[..., None], poses.numbers, poses.names)
    np.testing.assert_allclose(orientation_features(shifted), F, atol=1e-10)
    # the shape ratios are rotation-invariant, the orientation columns are not
    rot = centre(poses).rotated(random_rotations(25, 0))
    G = orientation_features(rot)
    np.testing.assert_allclose(G[:, -2:], F[:, -2:], atol=1e-10)
    assert not np.allclose(G[:, :12], F[:, :12], atol=1e-3)
    # S / tr S from the frame equals the directly computed lab second-moment matrix
    x = centre(poses).positions
    S = np.einsum("bni,bnj->bij", x, x)
    S /= np.trace(S, axis1=1, axis2=2)[:, None, None]
    np.testing.assert_allclose(F[:, 6:9], S[:, [0, 1, 2], [0, 1, 2]], atol=1e-10)
    np.testing.assert_allclose(F[:, 9], S[:, 0, 1], atol=1e-10)
