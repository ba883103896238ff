"""Generated data: the PDE trajectories follow their 3x3 stencils; moving digits stay on the canvas."""

from __future__ import annotations

import numpy as np
import pytest
from convt3.data import (
    PDES,
    load_moving_mnist,
    load_pdebench_2d,
    moving_digits,
    pde_trajectories,
    stencil,
)
from convt3.reference import depthwise_conv3x3, explicit_operator


@pytest.mark.parametrize("kind", PDES)
def test_trajectories_follow_the_stencil_and_the_forcing(kind):
    traj = pde_trajectories(kind, 3, 12, size=8, seed=1).astype(np.float64)
    assert traj.shape == (3, 12, 2, 8, 8)
    u, f = traj[:, :, 0], traj[:, :, 1]
    nxt = depthwise_conv3x3(u[:, :-1].reshape(-1, 1, 8, 8), stencil(kind)[None]).reshape(
        3, 11, 8, 8
    )
    np.testing.assert_allclose(u[:, 1:], nxt + f[:, :-1], atol=1e-5)
    # stable: the update's spectral radius is below one
    assert np.abs(np.linalg.eigvals(explicit_operator(stencil(kind), 8, 8))).max() < 1


def test_heat_stencil_is_a_ptt_kernel_with_positive_corner_spectrum():
    K = stencil("heat")
    np.testing.assert_allclose(K, K.T)
    # eps = 0.6 + 0.2 cos(theta) + 0.2 cos(phi): corners (1.0, 0.6, 0.6, 0.2) > 0
    corners = [K[1, 1] + 2 * s * K[0, 1] + 2 * t * K[1, 0] for s in (1, -1) for t in (1, -1)]
    np.testing.assert_allclose(corners, [1.0, 0.6, 0.6, 0.2], atol=1e-12)
    assert np.count_nonzero(stencil("pointwise")) == 1


def test_moving_digits_bounce_inside_the_canvas():
    digits = np.random.default_rng(0).random((5, 8, 8))
    frames = moving_digits(digits, 4, 40, canvas=20, seed=2)
    assert frames.shape == (4, 40, 1, 20, 20)
    assert frames.min() >= 0 and frames.max() <= 1
    mass = frames.sum((2, 3, 4))
    assert (mass > 0).all()  # digits never leave the canvas


def test_bad_arguments_raise_clearly():
    with pytest.raises(ValueError, match="kind: expected one of"):
        pde_trajectories("wave", 2, 4)
    with pytest.raises(ValueError, match="steps: expected an int >= 1"):
        pde_trajectories("heat", 2, 0)
    with pytest.raises(ValueError, match="digits: expected"):
        moving_digits(np.zeros((3, 40, 40)), 1, 2, canvas=32)
    with pytest.raises(ValueError, match="kind: expected one of"):
        stencil("wave")


def test_moving_mnist_reader_takes_the_published_time_major_layout(tmp_path):
    rng = np.random.default_rng(0)
    raw = rng.integers(
        0, 256, (7, 3, 16, 16), dtype=np.uint8
    )  # (T, N, H, W) like mnist_test_seq.npy
    np.save(tmp_path / "mm.npy", raw)
    seqs = load_moving_mnist(tmp_path / "mm.npy")
    assert seqs.shape == (3, 7, 1, 16, 16) and seqs.dtype == np.float32
    np.testing.assert_allclose(seqs[1, 4, 0], raw[4, 1] / 255.0, rtol=1e-6)
    np.save(tmp_path / "bad.npy", raw.astype(np.float32))
    with pytest.raises(ValueError, match="expected a uint8 array"):
        load_moving_mnist(tmp_path / "bad.npy")
    with pytest.raises(FileNotFoundError, match="no Moving-MNIST file"):
        load_moving_mnist(tmp_path / "missing.npy")


def test_pdebench_reader_takes_one_group_per_simulation(tmp_path):
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(1)
    sims = rng.standard_normal((3, 5, 8, 8, 2)).astype(np.float32)  # (N, T, H, W, C)
    with h5py.File(tmp_path / "2D_diff-react_NA_NA.h5", "w") as f:
        for i, sim in enumerate(sims):
            g = f.create_group(f"{i:04d}")
            g.create_dataset("data", data=sim)
            g.create_dataset("grid/x", data=np.linspace(-1, 1, 8))
            g.create_dataset("grid/y", data=np.linspace(-1, 1, 8))
            g.create_dataset("grid/t", data=np.linspace(0, 5, 5))
    out = load_pdebench_2d(tmp_path / "2D_diff-react_NA_NA.h5")
    assert out.shape == (3, 5, 2, 8, 8)
    np.testing.assert_array_equal(out[2, 3, 1], sims[2, 3, :, :, 1])
    assert load_pdebench_2d(tmp_path / "2D_diff-react_NA_NA.h5", limit=2).shape[0] == 2
    with h5py.File(tmp_path / "empty.h5", "w") as f:
        f.create_dataset("other", data=np.zeros(3))
    with pytest.raises(ValueError, match="no simulation groups"):
        load_pdebench_2d(tmp_path / "empty.h5")
