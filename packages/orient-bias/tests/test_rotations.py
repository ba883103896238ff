from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from orient_bias.reference import haar_rotation_reference
from orient_bias.rotations import (
    geodesic_angle,
    haar_angle_cdf,
    haar_angle_pdf,
    matrix_to_quaternion,
    quaternion_to_matrix,
    random_rotations,
    random_rotations_torch,
    rotation_6d,
    rotation_angle,
)
from scipy.stats import kstest


def test_numpy_sampler_is_proper_and_haar():
    R = random_rotations(20000, 0)
    assert R.shape == (20000, 3, 3)
    np.testing.assert_allclose(
        R @ np.swapaxes(R, 1, 2), np.broadcast_to(np.eye(3), R.shape), atol=1e-12
    )
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-12)
    assert kstest(rotation_angle(R), haar_angle_cdf).pvalue > 0.01
    # uniform rotation maps a fixed vector to a uniform direction: each coordinate ~ U[-1, 1]
    assert kstest(R[:, :, 0].ravel(), "uniform", args=(-1, 2)).pvalue > 0.01


def test_naive_uniform_angle_axis_is_rejected():
    """The KS test has power: uniform angle + uniform axis (a common mistake) is not Haar."""
    w = np.random.default_rng(1).uniform(0, np.pi, 20000)
    assert kstest(w, haar_angle_cdf).pvalue < 1e-6


def test_matches_independent_reference_sampler():
    rng = np.random.default_rng(2)
    ref = np.array([rotation_angle(haar_rotation_reference(rng)) for _ in range(5000)])
    from scipy.stats import ks_2samp

    assert ks_2samp(ref, rotation_angle(random_rotations(5000, 3))).pvalue > 0.01


def test_torch_sampler_matches_numpy_law_and_is_seeded():
    g = torch.Generator().manual_seed(0)
    R = random_rotations_torch(20000, g, dtype=torch.float64)
    assert R.dtype == torch.float64
    np.testing.assert_allclose(torch.linalg.det(R).numpy(), 1.0, atol=1e-12)
    assert kstest(rotation_angle(R).numpy(), haar_angle_cdf).pvalue > 0.01
    R2 = random_rotations_torch(20000, torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.equal(R, R2)
    assert random_rotations_torch(3).dtype == torch.float32


def test_seed_determinism():
    np.testing.assert_array_equal(random_rotations(5, 7), random_rotations(5, 7))
    assert not np.allclose(random_rotations(5, 7), random_rotations(5, 8))


def test_haar_density_integrates_to_cdf():
    w = np.linspace(0, np.pi, 20001)
    pdf = haar_angle_pdf(w)
    cdf = np.concatenate([[0], np.cumsum((pdf[1:] + pdf[:-1]) / 2 * np.diff(w))])
    np.testing.assert_allclose(cdf, haar_angle_cdf(w), atol=1e-7)
    assert haar_angle_cdf(np.pi) == pytest.approx(1.0)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10_000))
def test_quaternion_round_trip(seed):
    R = random_rotations(4, seed)
    q = matrix_to_quaternion(R)
    np.testing.assert_allclose(np.linalg.norm(q, axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(quaternion_to_matrix(q), R, atol=1e-10)


def test_geodesic_angle_properties():
    A, B = random_rotations(100, 0), random_rotations(100, 1)
    np.testing.assert_allclose(geodesic_angle(A, A), 0, atol=1e-6)
    np.testing.assert_allclose(geodesic_angle(A, B), geodesic_angle(B, A), atol=1e-12)
    np.testing.assert_allclose(
        geodesic_angle(A, B), rotation_angle(A @ np.swapaxes(B, 1, 2)), atol=1e-7
    )
    # left-invariance of the metric: d(CA, CB) = d(A, B)
    C = random_rotations(100, 2)
    np.testing.assert_allclose(geodesic_angle(C @ A, C @ B), geodesic_angle(A, B), atol=1e-6)


def test_bad_input():
    with pytest.raises(ValueError, match="n: expected"):
        random_rotations(-1)
    with pytest.raises(ValueError, match="q: expected shape"):
        quaternion_to_matrix(np.ones((2, 3)))
    with pytest.raises(ValueError, match="R: expected shape"):
        rotation_6d(np.ones((2, 3)))
    with pytest.raises(TypeError, match="numpy array or torch tensor"):
        quaternion_to_matrix([1, 0, 0, 0])


@pytest.mark.parametrize(
    ("dtype", "ratio"), [("float64", 1e-12), ("float32", 1e-6), ("bfloat16", 1e-2)]
)
def test_torch_quaternion_to_matrix_matches_numpy_reference(device, dtype, ratio):
    from shared_core.testing import assert_close

    q = np.random.default_rng(0).normal(size=(512, 4))
    ref = quaternion_to_matrix(q)  # float64 NumPy on the CPU
    fast = quaternion_to_matrix(torch.as_tensor(q, device=device).to(getattr(torch, dtype)))
    assert fast.device.type == torch.device(device).type
    assert_close(f"quaternion_to_matrix {dtype}", ref, fast, ratio)


@pytest.mark.parametrize(
    ("dtype", "ratio"), [("float64", 1e-12), ("float32", 1e-6), ("bfloat16", 1e-2)]
)
def test_torch_sampler_on_device_matches_float64_cpu(device, dtype, ratio):
    from shared_core.testing import assert_close

    ref = random_rotations_torch(256, torch.Generator().manual_seed(3), dtype=torch.float64)
    fast = random_rotations_torch(
        256, torch.Generator().manual_seed(3), dtype=getattr(torch, dtype), device=device
    )
    assert_close(f"random_rotations_torch {dtype}", ref, fast, ratio)
    assert_close(f"rotation_angle {dtype}", rotation_angle(ref), rotation_angle(fast), 20 * ratio)


def test_bounded_rotations_are_haar_conditioned_on_the_angle():
    from orient_bias.rotations import haar_angle_cdf, random_rotations_bounded, rotation_angle

    R = random_rotations_bounded(4000, 60.0, 0)
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-12)
    np.testing.assert_allclose(
        R @ np.swapaxes(R, 1, 2), np.broadcast_to(np.eye(3), R.shape), atol=1e-12
    )
    w = rotation_angle(R)
    a = np.radians(60.0)
    assert w.max() <= a + 1e-12
    # the angle follows the Haar CDF restricted to [0, α]
    assert kstest(w, lambda t: haar_angle_cdf(t) / haar_angle_cdf(a)).pvalue > 1e-3
    # axes uniform: the mean rotation axis is ~0
    axes = np.stack([R[:, 2, 1] - R[:, 1, 2], R[:, 0, 2] - R[:, 2, 0], R[:, 1, 0] - R[:, 0, 1]], 1)
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    assert np.abs(axes.mean(0)).max() < 0.06
    np.testing.assert_allclose(
        random_rotations_bounded(3, 0.0, 1), np.broadcast_to(np.eye(3), (3, 3, 3))
    )
    np.testing.assert_array_equal(
        random_rotations_bounded(5, 90.0, 7), random_rotations_bounded(5, 90.0, 7)
    )
    with pytest.raises(ValueError, match="max_angle"):
        random_rotations_bounded(3, 181.0)
