"""The task generators: MQAR layout, regression tokens, ridge oracle, char corpus windows."""

from __future__ import annotations

import numpy as np
import pytest
from mesa_layer.data import char_batch, multiquery_ar, regression_batch, ridge_oracle_mse


def test_mqar_labels_are_the_values_of_repeated_keys():
    x, y = multiquery_ar(vocab_size=64, num_examples=50, input_seq_len=32, num_kv_pairs=4, seed=0)
    assert x.shape == y.shape == (50, 32)
    for row_x, row_y in zip(x, y, strict=True):
        kv = dict(zip(row_x[0:8:2].tolist(), row_x[1:8:2].tolist(), strict=True))
        assert all(1 <= key < 32 for key in kv) and all(32 <= v < 64 for v in kv.values())
        pos = np.flatnonzero(row_y != -100)
        assert len(pos) == 4 and (pos >= 8).all()
        for p in pos:
            assert kv[int(row_x[p])] == row_y[p]  # the label sits on the query token itself


def test_mqar_is_seeded_and_checks_arguments():
    a = multiquery_ar(64, 5, 32, 4, seed=3)
    b = multiquery_ar(64, 5, 32, 4, seed=3)
    assert all(np.array_equal(u, w) for u, w in zip(a, b, strict=True))
    with pytest.raises(ValueError, match="num_kv_pairs"):
        multiquery_ar(64, 5, 32, 9, seed=0)
    with pytest.raises(ValueError, match="vocab_size"):
        multiquery_ar(32, 5, 32, 4, seed=0)
    with pytest.raises(ValueError, match="input_seq_len"):
        multiquery_ar(64, 5, 31, 4, seed=0)


def test_regression_tokens_and_noiseless_oracle_is_exact_after_d_examples():
    tokens, y = regression_batch(8, 40, 6, 0.0, np.random.default_rng(0))
    assert tokens.shape == (8, 40, 13)
    np.testing.assert_array_equal(tokens[:, 1:, 6:12], tokens[:, :-1, :6])
    np.testing.assert_array_equal(tokens[:, 1:, 12], y[:, :-1])
    mse = ridge_oracle_mse(tokens, y, 6, lam=1e-8)
    assert mse[0] > 0.1 and mse[10:].max() < 1e-6


def test_char_batch_targets_are_shifted_inputs():
    ids = np.arange(100)
    x, y = char_batch(ids, 4, 10, np.random.default_rng(0))
    np.testing.assert_array_equal(y, x + 1)


def test_constructed_mesa_head_is_the_ridge_oracle():
    pytest.importorskip("torch")
    from mesa_layer.experiments.regression import constructed_mse

    tokens, y = regression_batch(16, 48, 8, 0.1, np.random.default_rng(1))
    out = constructed_mse(tokens, y, 8, lam=0.08)
    np.testing.assert_allclose(out["mesa"], ridge_oracle_mse(tokens, y, 8, lam=0.08), atol=1e-10)
    late = slice(20, None)
    assert np.mean(out["mesa"][late]) < np.mean(out["deltanet"][late]) < np.mean(out["gla"][late])
