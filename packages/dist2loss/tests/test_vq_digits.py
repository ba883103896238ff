"""The VQ finding: patches, the codebook, sequences, sampling and the metric's pieces."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from dist2loss.experiments import vq_digits as vq
from dist2loss.metric import entropy_matched_tau, target_entropy
from dist2loss.model import TinyCausalLM

pytest.importorskip("sklearn")


def test_patches_round_trip_and_layout():
    rng = np.random.default_rng(0)
    images = rng.random((5, 8, 8))
    p = vq.to_patches(images, 2)
    assert p.shape == (5, 16, 4)
    # patch (row 1, col 2) of the 4x4 grid is pixels [2:4, 4:6], row-major inside the patch
    assert np.array_equal(p[3, 1 * 4 + 2], images[3, 2:4, 4:6].reshape(-1))
    assert np.array_equal(vq.from_patches(p, 2), images)
    assert np.array_equal(vq.from_patches(vq.to_patches(images, 4), 4), images)
    with pytest.raises(ValueError, match="patch"):
        vq.to_patches(images, 3)


def test_codebook_encode_decode_round_trip():
    """Images made of centroids encode to exactly their codes and decode back bit for bit;
    real digits encode to the nearest centroid (no other centroid is closer)."""
    images, _ = vq.load_digits()
    assert images.shape == (1797, 8, 8) and images.min() >= 0 and images.max() <= 1
    book = vq.fit_codebook(images[:300], 16, 2, seed=0, n_init=1)
    assert book.centroids.shape == (16, 4) and book.size == 16
    codes = np.random.default_rng(1).integers(0, 16, (20, 16))
    assert np.array_equal(book.encode(book.decode(codes)), codes)
    real = images[300:340]
    enc = book.encode(real)
    d = ((vq.to_patches(real, 2)[:, :, None] - book.centroids[None, None]) ** 2).sum(-1)
    chosen = np.take_along_axis(d, enc[..., None], -1)[..., 0]
    assert np.all(chosen <= d.min(-1) + 1e-12)
    # quantisation error is far below the images' own variance
    assert np.mean((book.decode(enc) - real) ** 2) < 0.25 * real.var()
    with pytest.raises(ValueError, match="codes"):
        book.decode(np.array([[16]]))


def test_split_is_disjoint_and_seeded():
    pool, test = vq.split(1797, 597, seed=3)
    assert len(pool) == 1200 and len(test) == 597
    assert len(np.intersect1d(pool, test)) == 0
    assert np.array_equal(np.sort(np.concatenate([pool, test])), np.arange(1797))
    assert np.array_equal(vq.split(1797, 597, seed=3)[0], pool)
    with pytest.raises(ValueError, match="test"):
        vq.split(10, 10, seed=0)


def test_sequences_table_and_entropy_matched_tau():
    book = vq.Codebook(np.random.default_rng(0).random((8, 4)), 2)
    codes = np.array([[0, 7, 3], [5, 5, 1]])
    seq = vq.sequences(codes, np.array([2, 9]), book.size)
    assert seq.dtype == torch.int64
    assert torch.equal(seq, torch.tensor([[10, 0, 7, 3], [17, 5, 5, 1]]))
    table = vq.code_table(book)
    assert table.vocab_size == 18 and table.size == 8 and table.kind == "vq"
    c = torch.as_tensor(book.centroids)
    assert torch.allclose(table.distance, ((c[:, None] - c[None]) ** 2).sum(-1))
    tau = entropy_matched_tau(table, 1.0)
    assert abs(target_entropy(table.distance, tau) - 1.0) < 1e-4


def test_sampled_sequences_are_valid_codes():
    k, length = 8, 16
    torch.manual_seed(0)
    model = TinyCausalLM(k + 10, 16, 1, 2, 32, length + 1)
    with torch.no_grad():  # make class tokens the model's favourite: sampling must still skip them
        model.embed.weight[k:] *= 50
    classes = torch.arange(10).repeat(3)
    gen = vq.sample_codes(model, classes, length, k, seed=0)
    assert gen.shape == (30, length) and gen.dtype == torch.int64
    assert int(gen.min()) >= 0 and int(gen.max()) < k
    assert torch.equal(gen, vq.sample_codes(model, classes, length, k, seed=0))


def test_dist2_arm_uses_the_codebook_metric():
    book = vq.Codebook(np.random.default_rng(0).random((8, 4)), 2)
    table = vq.code_table(book)
    cfg = vq.Config()
    torch.manual_seed(0)
    model = TinyCausalLM(18, 16, 1, 2, 32, 17)
    seq = vq.sequences(np.random.default_rng(2).integers(0, 8, (4, 16)), np.arange(4), 8)
    batch = (seq[:, :-1], seq[:, 1:])
    ce = vq.make_loss("ce", table, 0.1, cfg)(model, batch)
    loss, parts = vq.make_loss("dist2", table, 0.1, cfg)(model, batch)
    assert parts["ce"] == pytest.approx(float(ce.detach()), rel=1e-6)
    assert parts["dist2"] > 0  # the KL to p_d is positive for an untrained model
    assert float(loss.detach()) == pytest.approx(
        float(ce.detach()) + cfg.alpha * parts["dist2"], rel=1e-6
    )
    strong, _ = vq.make_loss("dist2_strong", table, 0.1, cfg)(model, batch)
    assert float(strong.detach()) == pytest.approx(
        float(ce.detach()) + cfg.strong_alpha * parts["dist2"], rel=1e-6
    )
    with pytest.raises(ValueError, match="method"):
        vq.make_loss("focal", table, 0.1, cfg)


def test_fd_interval_brackets_the_estimate_and_separates_distributions():
    rng = np.random.default_rng(0)
    real = rng.normal(size=(300, 4))
    near = rng.normal(size=(200, 4))
    far = rng.normal(size=(200, 4)) + 1.5
    fd, lo, hi = vq.fd_interval(near, real, seed=0)
    assert 0.0 <= lo <= fd <= hi
    fd_far, lo_far, _ = vq.fd_interval(far, real, seed=0)
    assert fd_far == pytest.approx(4 * 1.5**2, rel=0.2) and lo_far > hi


def test_run_in_rejects_bad_configs_before_work():
    with pytest.raises(ValueError, match="methods"):
        vq.run_in(None, vq.Config(methods=("ce", "focal")), 0, "cpu")
    with pytest.raises(ValueError, match="sizes"):
        vq.run_in(None, vq.Config(sizes=(100, 1500)), 0, "cpu")
