from __future__ import annotations

import math

import numpy as np
import pytest
from quality_scaling.data import MarkovSource, TransductionTask, corrupt, text_sequences


@pytest.mark.parametrize("order", [1, 2])
def test_markov_stationary_and_entropy(order: int) -> None:
    src = MarkovSource(vocab_size=8, concentration=0.5, order=order, seed=0)
    np.testing.assert_allclose(np.einsum("i...,i...k->...k", src.pi, src.P), src.pi, atol=1e-12)
    assert 0 < src.entropy_rate < math.log(8)
    seqs = src.sample(4000, 12, np.random.default_rng(0))
    assert seqs.shape == (4000, 13) and seqs.min() >= 0 and seqs.max() < 8
    # the empirical NLL of the true model matches the known irreducible loss
    ctx = tuple(seqs[:, order - 1 - j : 12 - j] for j in reversed(range(order)))
    nll = -np.log(src.P[(*ctx, seqs[:, order:])])
    want = src.irreducible_loss(12) if order == 1 else src.entropy_rate
    got = nll.mean()
    assert got == pytest.approx(want, rel=0.02)


def test_transduction_floor_matches_channel() -> None:
    t = TransductionTask(vocab_size=16, length=8, channel=0.1)
    s = t.sample(5000, np.random.default_rng(0))
    src, tgt = s[:, :8], s[:, 9:]
    agree = (t.cipher()[src[:, ::-1]] == tgt).mean()
    assert agree == pytest.approx(0.9, abs=0.01)
    assert (s[:, 8] == t.sep).all()
    e = 0.1
    assert t.irreducible_loss == pytest.approx(
        -(e * math.log(e) + 0.9 * math.log(0.9)) + e * math.log(15)
    )


def test_corruptions_keep_shape_and_rate() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 32, size=(500, 17))
    sub = corrupt(x, "substitute", 0.3, 32, np.random.default_rng(1))
    assert sub.shape == x.shape
    assert (sub != x).mean() == pytest.approx(0.3 * 31 / 32, abs=0.01)
    sh = corrupt(x, "shuffle", 0.5, 32, np.random.default_rng(1))
    np.testing.assert_array_equal(np.sort(sh, axis=1), np.sort(x, axis=1))
    dup = corrupt(x, "duplicate", 0.4, 32, np.random.default_rng(1))
    assert len({r.tobytes() for r in dup}) == 300
    pos = np.zeros(17, bool)
    pos[9:] = True
    tgt_only = corrupt(x, "substitute", 0.5, 32, np.random.default_rng(1), pos)
    np.testing.assert_array_equal(tgt_only[:, :9], x[:, :9])
    np.testing.assert_array_equal(corrupt(x, "shuffle", 0.0, 32, rng), x)


def test_bad_data_input() -> None:
    x = np.zeros((4, 5), dtype=np.int64)
    with pytest.raises(ValueError, match="kind"):
        corrupt(x, "delete", 0.1, 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rate"):
        corrupt(x, "shuffle", 1.5, 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="order"):
        MarkovSource(order=3)
    with pytest.raises(ValueError, match="tokens: expected more than"):
        text_sequences(np.arange(5), 2, 16, np.random.default_rng(0))
