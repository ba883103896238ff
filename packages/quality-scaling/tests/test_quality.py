from __future__ import annotations

import numpy as np
import pytest
from quality_scaling.data import MarkovSource, corrupt
from quality_scaling.quality import (
    corruption_rate_proxy,
    deficiency_q,
    estimate_duplication_rate,
    estimate_substitution_rate,
    markov_deficiency,
    ngram_pairs,
)

SRC = MarkovSource(vocab_size=16, concentration=0.3, seed=1)
RATES = [0.0, 0.1, 0.2, 0.35, 0.5]


def _sample(rows: int, seed: int) -> np.ndarray:
    return SRC.sample(rows, 16, np.random.default_rng(seed))


def test_proxy_is_one_minus_rate_and_in_range() -> None:
    assert corruption_rate_proxy(0.0) == 1.0
    q = corruption_rate_proxy(np.array(RATES))
    assert np.all(np.diff(q) < 0) and np.all((q > 0) & (q <= 1))
    with pytest.raises(ValueError, match="rate: expected 0 <= rate < 1"):
        corruption_rate_proxy(1.0)


def test_markov_deficiency_is_one_when_clean_and_decreasing() -> None:
    qs = [markov_deficiency(SRC, p) for p in RATES]
    assert qs[0] == pytest.approx(1.0, abs=1e-12)
    assert np.all(np.diff(qs) < 0) and np.all((np.array(qs) >= 0) & (np.array(qs) <= 1))


@pytest.mark.parametrize("kind", ["substitute", "shuffle", "duplicate"])
def test_deficiency_is_one_when_clean_and_monotone(kind: str) -> None:
    clean = _sample(2000, 0)
    held = ngram_pairs(_sample(1000, 1))
    qs = []
    for p in RATES:
        noisy = corrupt(clean, kind, p, 16, np.random.default_rng(2))
        qs.append(deficiency_q(ngram_pairs(noisy), ngram_pairs(clean), held, 16))
    assert qs[0] == 1.0
    assert np.all(np.diff(qs) < 0), qs
    assert all(0.0 <= q <= 1.0 for q in qs)


def test_plugin_deficiency_approaches_exact_value() -> None:
    clean = _sample(8000, 0)
    noisy = corrupt(clean, "substitute", 0.3, 16, np.random.default_rng(3))
    q = deficiency_q(ngram_pairs(noisy), ngram_pairs(clean), ngram_pairs(_sample(4000, 1)), 16)
    assert q == pytest.approx(markov_deficiency(SRC, 0.3), abs=0.03)


def test_substitution_rate_is_recovered() -> None:
    clean = _sample(4000, 0)
    ref = _sample(4000, 5)
    for p in (0.0, 0.2, 0.4):
        noisy = corrupt(clean, "substitute", p, 16, np.random.default_rng(4))
        assert estimate_substitution_rate(noisy, ref, 16) == pytest.approx(p, abs=0.03)


def test_duplication_rate_is_recovered() -> None:
    clean = _sample(1000, 0)
    for p in (0.0, 0.25, 0.5):
        dup = corrupt(clean, "duplicate", p, 16, np.random.default_rng(6))
        assert estimate_duplication_rate(dup) == pytest.approx(p, abs=0.01)
    stream = np.tile(np.arange(8), 4)
    assert estimate_duplication_rate(stream, chunk=8) == 0.75


def test_bad_quality_input() -> None:
    with pytest.raises(TypeError, match="integer token ids"):
        estimate_substitution_rate(np.ones((2, 3)), np.ones((2, 3), dtype=int), 4)
    with pytest.raises(ValueError, match="vocab_size"):
        estimate_substitution_rate(np.full((2, 3), 7), np.ones((2, 3), dtype=int), 4)
    with pytest.raises(ValueError, match="chunk"):
        estimate_duplication_rate(np.arange(10))
    pairs = ngram_pairs(_sample(10, 0))
    with pytest.raises(ValueError, match="clean: expected at least"):
        deficiency_q(pairs, (pairs[0][:5], pairs[1][:5]), pairs, 16)
    with pytest.raises(ValueError, match="order"):
        ngram_pairs(_sample(10, 0), order=40)
    with pytest.raises(ValueError, match="order-1"):
        markov_deficiency(MarkovSource(order=2, vocab_size=4), 0.1)
