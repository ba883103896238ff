"""The paper's "half of a corrupted sample's tokens": the count at odd lengths is floor(n / 2)
(17 -> 8), the same rule in the corruption and in its exact Markov floor."""

from __future__ import annotations

import numpy as np
import pytest
from quality_scaling.data import MarkovSource, corrupt, corrupted_tokens
from quality_scaling.quality import markov_noisy_floor


@pytest.mark.parametrize(("n", "k"), [(3, 1), (7, 3), (11, 5), (15, 7), (17, 8), (16, 8), (1, 1)])
def test_half_of_an_odd_length_is_rounded_down(n, k):
    assert corrupted_tokens(n, 0.5) == k


def test_other_fractions_floor_and_keep_one_token():
    assert corrupted_tokens(100, 0.29) == 29  # 0.29 * 100 = 28.999999999999996 in floats
    assert corrupted_tokens(17, 0.3) == 5
    assert corrupted_tokens(17, 0.01) == 1  # a corrupted sample has at least one token replaced
    assert corrupted_tokens(17, 1.0) == 17


@pytest.mark.parametrize("n", [15, 17])
def test_a_corrupted_odd_length_sample_has_floor_half_its_tokens_replaced(n):
    rows = np.zeros((200, n), dtype=np.int64)
    out = corrupt(rows, "samples", 0.5, 1 << 20, np.random.default_rng(0))
    changed = (out != rows).sum(axis=1)
    hit = changed[changed > 0]
    assert len(hit) == 100
    # drawn from 2^20 tokens, a replacement equals the old 0 about once in 10^5 rows
    assert np.all(hit == n // 2)


def test_the_markov_floor_uses_the_same_count():
    src = MarkovSource(vocab_size=6, seed=0)
    # rows of 15: k = 7 replaced of 15; 8 (round-half-even) gives a different floor
    got = markov_noisy_floor(src, 0.3, "samples", row_length=15)
    seven = markov_noisy_floor(src, 0.3, "samples", row_length=15, token_fraction=7 / 15)
    assert got == pytest.approx(seven, rel=1e-12)
