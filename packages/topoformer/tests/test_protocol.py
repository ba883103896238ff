"""Folds and the two selection protocols."""

from __future__ import annotations

import numpy as np
import pytest
from topoformer.protocol import inner_split, kfold, select


def test_kfold_is_scikit_learns_kfold():
    from sklearn.model_selection import KFold

    for n in (20, 188, 191):
        want = list(KFold(10, shuffle=True, random_state=123).split(np.arange(n)))
        got = kfold(n, 10, 123)
        for (a, b), (c, d) in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, np.sort(c))
            np.testing.assert_array_equal(b, np.sort(d))


def test_inner_split_is_disjoint_stratified_and_inside_the_fold():
    y = np.array([0] * 60 + [1] * 30)
    train = np.arange(0, 90, 1)
    fit, val = inner_split(train, y, 0.1, seed=0)
    assert len(np.intersect1d(fit, val)) == 0
    np.testing.assert_array_equal(np.sort(np.concatenate([fit, val])), train)
    assert np.bincount(y[val]).tolist() == [6, 3]


def test_select_reads_both_protocols():
    s = select([0.5, 0.9, 0.9, 0.7], [0.6, 0.7, 0.8, 0.95])
    assert (s.honest, s.optimistic, s.epoch) == (0.7, 0.95, 1)
    r = select([3.0, 2.0, 2.5], [2.9, 2.2, 1.5], higher_is_better=False)
    assert (r.honest, r.optimistic, r.epoch) == (2.2, 1.5, 1)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="n_folds"):
        kfold(10, 1)
    with pytest.raises(ValueError, match="at least n_folds"):
        kfold(3, 5)
    with pytest.raises(ValueError, match="val_fraction"):
        inner_split(np.arange(5), None, 1.5, 0)
    with pytest.raises(ValueError, match="equal-length"):
        select([0.1], [0.1, 0.2])
