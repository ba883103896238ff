from __future__ import annotations

import numpy as np
import pytest
from orient_bias.reference import knn_kl_reference
from orient_bias.rotations import random_rotations
from orient_bias.uniformity import (
    knn_kl_to_haar,
    most_common_orientation,
    pairwise_geodesic,
    uniformity_stats,
)


def test_pairwise_geodesic_matches_loop():
    A, B = random_rotations(7, 0), random_rotations(5, 1)
    D = pairwise_geodesic(A, B)
    for i in range(7):
        for j in range(5):
            c = (np.trace(A[i] @ B[j].T) - 1) / 2
            assert D[i, j] == pytest.approx(np.arccos(np.clip(c, -1, 1)), abs=1e-7)


def test_knn_kl_matches_reference():
    R = random_rotations(300, 0)
    ref = knn_kl_reference(pairwise_geodesic(R, R), k=5)
    assert knn_kl_to_haar(R, 5) == pytest.approx(ref, abs=1e-9)


def test_uniform_vs_concentrated():
    R = random_rotations(3000, 0)
    u = uniformity_stats(R, seed=0)
    assert abs(u.kl_to_haar) < 0.1
    assert u.ks_pvalue > 0.001
    # planted: 70% of poses within a few degrees of one orientation
    rng = np.random.default_rng(1)
    small = random_rotations(2100, 2)
    axis_angle_scale = 0.05
    from orient_bias.rotations import quaternion_to_matrix

    q = np.c_[np.ones(2100), rng.normal(scale=axis_angle_scale, size=(2100, 3))]
    near = quaternion_to_matrix(q) @ small[0]
    mixed = np.concatenate([near, random_rotations(900, 3)])
    v = uniformity_stats(mixed, seed=0)
    assert v.kl_to_haar > 1.0
    assert v.ks_pvalue < 1e-10
    np.testing.assert_allclose(
        np.degrees(pairwise_geodesic(mixed[[v.mode_index]], small[[0]])), 0, atol=10
    )
    assert most_common_orientation(mixed, 0.5) < 2100


def test_bad_input():
    with pytest.raises(ValueError, match="Ra: expected shape"):
        pairwise_geodesic(np.ones((3, 3)), np.ones((2, 3, 3)))
    with pytest.raises(ValueError, match="k: expected"):
        knn_kl_to_haar(random_rotations(5, 0), k=5)
    with pytest.raises(ValueError, match="sigma"):
        most_common_orientation(random_rotations(5, 0), sigma=0)
