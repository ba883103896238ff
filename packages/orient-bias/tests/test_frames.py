from __future__ import annotations

import numpy as np
import pytest
from conftest import asymmetric_molecule
from hypothesis import given, settings
from hypothesis import strategies as st
from orient_bias.frames import (
    ASYMMETRIC,
    LINEAR,
    OBLATE,
    PROLATE,
    SPHERICAL,
    Poses,
    authors_frames,
    centre,
    pad,
    principal_frames,
)
from orient_bias.reference import principal_frame_reference
from orient_bias.rotations import random_rotations

from shared_core.data import Molecule
from shared_core.testing import assert_close


def _pose(x: np.ndarray, z: np.ndarray | None = None) -> Poses:
    z = np.full(len(x), 6) if z is None else z
    return pad([Molecule(z, x)])


def test_pose_is_rotation_applied_to_canonical_pose():
    mols = [asymmetric_molecule(s, n=5 + s % 7) for s in range(40)]
    poses = pad(mols)
    fr = principal_frames(poses)
    y = fr.canonical(poses)
    back = np.einsum("bij,bnj->bni", fr.rotation, y) + fr.centroid[:, None] * poses.mask[..., None]
    np.testing.assert_allclose(back, poses.positions, atol=1e-8)
    np.testing.assert_allclose(np.linalg.det(fr.axes), 1.0, atol=1e-12)
    # the canonical second-moment matrix is diagonal with decreasing entries
    S = np.einsum("bni,bnj->bij", y, y) / poses.n_atoms[:, None, None]
    np.testing.assert_allclose(
        S - np.einsum("bi,ij->bij", fr.eigenvalues, np.eye(3)), 0, atol=1e-10
    )


@pytest.mark.parametrize("weighting", ["none", "mass"])
def test_matches_reference(weighting):
    mols = [asymmetric_molecule(s, n=4 + s % 9) for s in range(30)]
    fr = principal_frames(pad(mols), weighting)
    ref = [principal_frame_reference(m.positions, m.numbers, weighting) for m in mols]
    for b, (axes, lam, kind) in enumerate(ref):
        np.testing.assert_allclose(fr.axes[b], axes, atol=1e-10)
        np.testing.assert_allclose(fr.eigenvalues[b], lam, atol=1e-12)
        assert fr.kind[b] == kind == ASYMMETRIC
    assert_close(f"axes ({weighting})", np.stack([r[0] for r in ref]), fr.axes, 1e-10)
    assert_close(f"eigenvalues ({weighting})", np.stack([r[1] for r in ref]), fr.eigenvalues, 1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_equivariance_and_atom_order_invariance(seed):
    m = asymmetric_molecule(seed)
    rng = np.random.default_rng(seed)
    R = random_rotations(1, rng)[0]
    perm = rng.permutation(len(m))
    shift = rng.normal(size=3) * 5
    moved = Molecule(m.numbers[perm], m.positions[perm] @ R.T + shift)
    f0, f1 = principal_frames(pad([m])), principal_frames(pad([moved]))
    # rows are lab-frame axes: rotating the molecule rotates them, axes' = axes Rᵀ
    np.testing.assert_allclose(f1.axes[0], f0.axes[0] @ R.T, atol=1e-8)
    # the canonical pose is invariant (up to atom order)
    np.testing.assert_allclose(
        f1.canonical(pad([moved]))[0], f0.canonical(pad([m]))[0][perm], atol=1e-8
    )


def test_sign_rule_max_projection_positive():
    fr = principal_frames(pad([asymmetric_molecule(s) for s in range(20)]))
    poses = centre(pad([asymmetric_molecule(s) for s in range(20)]))
    p = np.einsum("bni,bki->bnk", poses.positions, fr.axes)
    for k in (0, 1):
        assert np.all(p[:, :, k].max(1) >= -p[:, :, k].min(1))


def test_centrosymmetric_tie_uses_third_moment_then_lab_rule():
    # extremes tie at x = ±3, cross moments vanish (mirror-symmetric groups), Σx³ = 1.5 > 0
    grp = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]], dtype=float)
    x = np.vstack([
        [[3.0, 0, 0], [-3.0, 0, 0], [-2.0, 0, 0]],
        np.c_[np.full(4, 1.5), grp * [0.5, 0.2]],
        np.c_[np.full(4, -1.0), grp * [0.4, 0.3]],
    ])  # fmt: skip
    fr = principal_frames(_pose(x))
    assert fr.kind[0] == ASYMMETRIC
    np.testing.assert_allclose(fr.axes[0, 0], [1, 0, 0], atol=1e-10)
    # PC2 (y) ties at ±0.5 with zero skew (mirror symmetric): the lab rule gives +y
    np.testing.assert_allclose(fr.axes[0, 1], [0, 1, 0], atol=1e-10)
    # rotating by 180° about z flips the skew in the lab: PC1 follows the molecule, while
    # PC2 is still fixed by the lab rule (the documented, non-equivariant fallback)
    fr2 = principal_frames(_pose(x @ np.diag([-1.0, -1.0, 1.0])))
    np.testing.assert_allclose(fr2.axes[0], np.diag([-1.0, 1.0, -1.0]), atol=1e-10)


def test_fully_centrosymmetric_uses_lab_rule():
    # fully centrosymmetric: the lab rule makes the largest lab component positive
    c = np.array(
        [
            [2.0, 0.3, 0],
            [-2.0, -0.3, 0],
            [0.2, 1.0, 0.1],
            [-0.2, -1.0, -0.1],
            [0, 0.05, 0.5],
            [0, -0.05, -0.5],
        ]
    )
    fr = principal_frames(_pose(c))
    for k in (0, 1):
        v = fr.axes[0, k]
        assert v[np.abs(v).argmax()] > 0
    # and the result does not depend on atom order
    fr2 = principal_frames(_pose(c[::-1].copy()))
    np.testing.assert_allclose(fr2.axes, fr.axes, atol=1e-10)


def test_linear_molecule_policy():
    x = np.array([[0, 0, 0.0], [0.6, 0.8, 0], [1.2, 1.6, 0], [2.4, 3.2, 0.0]])
    fr = principal_frames(_pose(x))
    assert fr.kind[0] == LINEAR
    np.testing.assert_allclose(fr.axes[0, 0], [0.6, 0.8, 0], atol=1e-10)  # toward the far atom
    # PC2 is the lab axis most orthogonal to PC1 (z here), projected: exactly e_z
    np.testing.assert_allclose(fr.axes[0, 1], [0, 0, 1], atol=1e-10)
    np.testing.assert_allclose(np.linalg.det(fr.axes[0]), 1.0)


def test_symmetric_and_spherical_tops():
    # oblate: a regular hexagon in the xy-plane (benzene-like ring), normal along z
    t = np.arange(6) * np.pi / 3
    ring = np.stack([np.cos(t), np.sin(t), np.zeros(6)], 1) * 1.4
    ring_up = np.vstack([ring, [[0, 0, 0.4], [0, 0, -0.1]]])
    fr = principal_frames(_pose(ring_up))
    assert fr.kind[0] == OBLATE
    np.testing.assert_allclose(fr.axes[0, 2], [0, 0, 1], atol=1e-8)  # normal, toward the +0.4 atom
    np.testing.assert_allclose(fr.axes[0, 0], [1, 0, 0], atol=1e-8)  # lab x, most orthogonal
    # prolate: a stretched regular triangular bipyramid about x
    tri = np.stack(
        [np.zeros(3), np.cos(2 * np.pi * np.arange(3) / 3), np.sin(2 * np.pi * np.arange(3) / 3)], 1
    )
    pro = np.vstack([tri, [[3.0, 0, 0], [-2.0, 0, 0]]])
    fr = principal_frames(_pose(pro))
    assert fr.kind[0] == PROLATE
    np.testing.assert_allclose(fr.axes[0, 0], [1, 0, 0], atol=1e-8)
    # spherical: a tetrahedron (methane's carbon skeleton) gives the lab frame
    tet = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1.0]])
    for R in random_rotations(3, 0):
        fr = principal_frames(_pose(tet @ R.T))
        assert fr.kind[0] == SPHERICAL
        np.testing.assert_allclose(fr.axes[0], np.eye(3))
    # degenerate policy equals the reference implementation
    for x in (ring_up, pro, tet, np.array([[0, 0, 0.0], [1, 1, 1]])):
        axes, _, kind = principal_frame_reference(x, np.full(len(x), 6))
        fr = principal_frames(_pose(x))
        assert fr.kind[0] == kind
        np.testing.assert_allclose(fr.axes[0], axes, atol=1e-10)


def test_bad_input():
    with pytest.raises(ValueError, match="fewer than 2 atoms"):
        principal_frames(_pose(np.array([[0.0, 0, 0]])))
    with pytest.raises(ValueError, match="all atoms coincide"):
        principal_frames(_pose(np.zeros((3, 3))))
    with pytest.raises(ValueError, match="positions: expected shape"):
        Poses(np.zeros((2, 3)), np.zeros(2), np.array(["a", "b"]))
    with pytest.raises(ValueError, match="numbers: expected shape"):
        Poses(np.zeros((2, 4, 3)), np.ones((2, 3)), np.array(["a", "b"]))
    with pytest.raises(ValueError, match="NaN"):
        Poses(np.full((1, 2, 3), np.nan), np.ones((1, 2)), np.array(["a"]))
    with pytest.raises(ValueError, match="weighting"):
        principal_frames(pad([asymmetric_molecule()]), "charge")
    with pytest.raises(ValueError, match="tol"):
        principal_frames(pad([asymmetric_molecule()]), tol=2.0)
    with pytest.raises(ValueError, match="molecules: expected at least one"):
        pad([])


def test_pad_round_trip():
    mols = [asymmetric_molecule(s, n=3 + s) for s in range(5)]
    p = pad(mols)
    assert p.positions.shape == (5, 7, 3)
    for b, m in enumerate(mols):
        np.testing.assert_array_equal(p.positions[b, : len(m)], m.positions)
        np.testing.assert_array_equal(p.numbers[b, len(m) :], 0)


def test_authors_rule_equals_ours_without_ties_and_differs_on_a_tie():
    poses = pad([asymmetric_molecule(s) for s in range(30)])
    np.testing.assert_allclose(authors_frames(poses), principal_frames(poses).axes, atol=1e-10)
    # a centrosymmetric molecule (|max+| = |max-| on both axes): the official rule takes the
    # first extreme atom, ours the lab rule; both remain proper rotations
    c = np.array([[2.0, 0.3, 0], [-2.0, -0.3, 0], [0.2, 1.0, 0.1], [-0.2, -1.0, -0.1],
                  [0, 0.05, 0.5], [0, -0.05, -0.5]])  # fmt: skip
    A = authors_frames(_pose(c))[0]
    np.testing.assert_allclose(A @ A.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(A) == pytest.approx(1.0)


def test_linear_and_tied_frames_are_stable_under_1e_12_noise():
    """A linear molecule along a lab axis (QM9's acetylene, index 3): PC2 comes from the lab
    axis most orthogonal to PC1, where y and z tie exactly. Ties are decided within tol, so
    1e-12 Å of noise leaves the frame unchanged (without the tolerance, PC2 jumps by 90°)."""
    x = np.array([[0.5995, 0.0, 1.0], [-0.5995, 0.0, 1.0], [-1.6616, 0.0, 1.0], [1.6616, 0.0, 1.0]])
    c = np.array([[2.0, 0.3, 0], [-2.0, -0.3, 0], [0.2, 1.0, 0.1], [-0.2, -1.0, -0.1],
                  [0, 0.05, 0.5], [0, -0.05, -0.5]])  # fmt: skip
    rng = np.random.default_rng(0)
    for pos, z in ((x, np.array([6, 6, 1, 1])), (c, np.full(6, 6))):
        base = principal_frames(_pose(pos, z)).axes
        for _ in range(20):
            noisy = principal_frames(_pose(pos + 1e-12 * rng.standard_normal(pos.shape), z)).axes
            np.testing.assert_allclose(noisy, base, atol=1e-6)


def test_qm9_frames_are_stable_under_1e_12_noise(qm9_csv):
    from orient_bias.data import parse_qm9pack_csv

    arrays, _ = parse_qm9pack_csv(qm9_csv, limit=3000)
    poses = Poses(arrays["positions"], arrays["numbers"], arrays["names"])
    rng = np.random.default_rng(0)
    noise = 1e-12 * rng.standard_normal(poses.positions.shape) * poses.mask[..., None]
    a = principal_frames(poses).axes
    b = principal_frames(Poses(poses.positions + noise, poses.numbers, poses.names)).axes
    assert not np.any(np.abs(a - b).max((1, 2)) > 1e-6)
