"""The baselines fit, score and refuse bad input like the estimator."""

from __future__ import annotations

import numpy as np
import pytest
from explainable_mixtures.baselines import (
    GaussianMixtureBaseline,
    MixtureDensityNetwork,
    TreeGaussian,
)
from explainable_mixtures.data import planted, split
from explainable_mixtures.reference import partition_log_density


@pytest.fixture(scope="module")
def data():
    return split(planted(1500, seed=5), 0.3, 5)


def test_tree_with_the_planted_leaves_is_near_the_truth(data):
    train, test = data
    truth = partition_log_density(
        test.X, test.y, [list(map(tuple, b)) for b in train.boxes], train.means, train.covs
    ).mean()
    tree = TreeGaussian(4).fit(train.X, train.y)
    assert tree.tree_.get_n_leaves() == 4
    assert np.mean(tree.log_density(test.X, test.y)) > truth - 0.1


def test_gmm_ignores_x_and_is_worse_than_conditional_models(data):
    train, test = data
    gmm = GaussianMixtureBaseline(6).fit(train.X, train.y)
    assert 1 <= gmm.n_components_ <= 6
    shuffled = test.X[np.random.default_rng(0).permutation(len(test.X))]
    np.testing.assert_array_equal(
        gmm.log_density(test.X, test.y), gmm.log_density(shuffled, test.y)
    )
    tree = TreeGaussian(4).fit(train.X, train.y)
    assert (
        np.mean(tree.log_density(test.X, test.y)) > np.mean(gmm.log_density(test.X, test.y)) + 0.5
    )


def test_mdn_learns_the_conditional(data):
    train, test = data
    gmm = GaussianMixtureBaseline(6).fit(train.X, train.y)
    mdn = MixtureDensityNetwork(4, steps=400, seed=0).fit(train.X, train.y)
    assert np.mean(mdn.log_density(test.X, test.y)) > np.mean(gmm.log_density(test.X, test.y))


def test_baselines_refuse_bad_input(data):
    train, _ = data
    with pytest.raises(ValueError, match="max_leaves: expected a positive int"):
        TreeGaussian(0)
    with pytest.raises(ValueError, match="y: expected"):
        GaussianMixtureBaseline(2).fit(train.X, train.y[:10])
    with pytest.raises(ValueError, match="X: expected finite"):
        MixtureDensityNetwork(2, steps=1).fit(np.full_like(train.X, np.inf), train.y)


def test_mdn_early_stopping_keeps_the_best_held_out_weights():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(120, 8))
    y = rng.normal(size=120)  # pure noise: a long run overfits, the held-out check must not
    long = MixtureDensityNetwork(5, steps=600, eval_every=25, seed=0).fit(X, y)
    free = MixtureDensityNetwork(5, steps=600, valid=0.0, seed=0).fit(X, y)
    Xt, yt = rng.uniform(size=(2000, 8)), rng.normal(size=2000)
    assert np.mean(long.log_density(Xt, yt)) > np.mean(free.log_density(Xt, yt))
    with pytest.raises(ValueError, match="valid: expected a held-out share"):
        MixtureDensityNetwork(valid=1.0)
