"""The estimator end to end: planted-rule recovery, determinism, invariance, bad input, BIC."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from explainable_mixtures import ExplainableMixture
from explainable_mixtures.data import planted, split
from explainable_mixtures.recovery import fidelity, matched_jaccard
from explainable_mixtures.reference import partition_log_density

# our 0.1.0 variant: free components, coverage penalty, BIC counting the components too
OURS = {"components": "free", "gamma": 1.0, "bic_count": "all", "tau_start": 0.5}


@pytest.fixture(scope="module")
def planted_fit():
    train, test = split(planted(2000, seed=0), 0.3, 0)
    est = ExplainableMixture(8, steps=600, seed=0, **OURS)
    est.fit(train.X, train.y, train.feature_names)
    return est, train, test


@pytest.fixture(scope="module")
def paper_fit():
    """The defaults: the paper's induced components, objective NLL + lam R, rule-only BIC."""
    train, test = split(planted(2000, seed=0), 0.3, 0)
    est = ExplainableMixture(8, steps=600, seed=0).fit(train.X, train.y, train.feature_names)
    return est, train, test


def _recovery(est, train, test):
    boxes = [r.box(train.feature_names, train.bounds) for r in est.rules_]
    truth = partition_log_density(
        test.X, test.y, [list(map(tuple, b)) for b in train.boxes], train.means, train.covs
    ).mean()
    jaccard = matched_jaccard(boxes, train.boxes)
    return jaccard, fidelity(test.X, est.assign(test.X), boxes), est.score(test.X, test.y) - truth


def test_the_paper_defaults_recover_the_planted_rules(paper_fit):
    est, train, test = paper_fit
    assert est.get_params()["components"] == "induced" and est.gamma == 0.0
    assert est.bic_count == "rules"
    assert est.model_.k == 4
    jaccard, fid, gap = _recovery(est, train, test)
    assert jaccard.min() >= 0.75, jaccard
    assert fid >= 0.8
    assert gap > -0.06  # mean log-likelihood within 0.06 nats of the planted model's own
    used = sorted(tuple(sorted(c.feature for c in r.conditions)) for r in est.rules_)
    assert used == [("x0", "x1"), ("x0", "x1"), ("x0", "x2"), ("x0", "x2")]


def test_bic_counts_only_the_rule_parameters_in_the_papers_mode(paper_fit):
    est, _, test = paper_fit
    thresholds = sum(
        (c.low is not None) + (c.high is not None) for r in est.rules_ for c in r.conditions
    )
    assert est.n_parameters() == thresholds == 8  # 4 rules, 2 one-sided conditions each
    n = len(test.X)
    nll = -est.log_density(test.X, test.y).sum()
    assert est.bic(test.X, test.y) == pytest.approx(2 * nll + thresholds * np.log(n), rel=1e-9)
    ours = copy.copy(est).set_params(bic_count="all")  # the same fit, counted our way
    # ours adds each rule's Gaussian: a mean and a variance per rule (1-D y)
    assert ours.n_parameters() == thresholds + 4 * 2
    assert ours.bic(test.X, test.y) - est.bic(test.X, test.y) == pytest.approx(8 * np.log(n))


def test_induced_components_stop_the_box_drift(paper_fit):
    """Without the coverage penalty, free components let the boxes drift off their rows (the
    0.1.0 finding); components induced by the rows each rule covers keep them there."""
    paper, train, test = paper_fit
    assert paper.gamma == 0.0
    free = ExplainableMixture(8, steps=600, seed=0, components="free", gamma=0.0, tau_start=0.5)
    free.fit(train.X, train.y, train.feature_names)
    _, fid_free, _ = _recovery(free, train, test)
    assert fid_free < 0.3  # the printed boxes do not hold the rows their rules explain
    _, fid_paper, _ = _recovery(paper, train, test)
    assert fid_paper > 0.8


def test_ours_recovers_the_planted_rules(planted_fit):
    est, train, test = planted_fit
    assert est.model_.k == 4  # 8 over-provisioned rules pruned/merged/selected down to the truth
    boxes = [r.box(train.feature_names, train.bounds) for r in est.rules_]
    jaccard = matched_jaccard(boxes, train.boxes)
    assert jaccard.min() >= 0.8, jaccard
    assert fidelity(test.X, est.assign(test.X), boxes) >= 0.9
    # each rule names only the planted features (x0 with x1, or x0 with x2)
    used = sorted(tuple(sorted(c.feature for c in r.conditions)) for r in est.rules_)
    assert used == [("x0", "x1"), ("x0", "x1"), ("x0", "x2"), ("x0", "x2")]


def test_ours_reaches_the_true_conditional_nll(planted_fit):
    est, train, test = planted_fit
    truth = partition_log_density(
        test.X, test.y, [list(map(tuple, b)) for b in train.boxes], train.means, train.covs
    ).mean()
    assert est.score(test.X, test.y) > truth - 0.05


def test_weights_assignments_and_predictions(planted_fit):
    est, _, test = planted_fit
    w = est.weights(test.X[:50])
    assert w.shape == (50, 4)
    np.testing.assert_allclose(w.sum(1), 1.0, atol=1e-6)
    assert (est.assign(test.X[:50]) == w.argmax(1)).all()
    means = np.array([r.mean for r in est.rules_])
    np.testing.assert_allclose(est.predict(test.X[:50]), w @ means, atol=1e-9)
    text = est.describe()
    assert text.count("\n") == 3 and "IF" in text and "THEN" in text
    shares = [r.share for r in est.rules_]  # rule i = column i of weights, by share
    assert shares == sorted(shares, reverse=True)
    np.testing.assert_allclose(est.weights(test.X).mean(0), shares, atol=0.05)
    assert np.isfinite(est.bic(test.X, test.y))


def test_fit_is_deterministic():
    train, _ = split(planted(400, seed=1), 0.3, 1)
    a = ExplainableMixture(4, steps=60, seed=3).fit(train.X, train.y)
    b = ExplainableMixture(4, steps=60, seed=3).fit(train.X, train.y)
    np.testing.assert_array_equal(a.log_density(train.X, train.y), b.log_density(train.X, train.y))
    assert a.describe() == b.describe()


def test_rescaling_a_feature_rescales_its_thresholds_only():
    train, test = split(planted(400, seed=2), 0.3, 2)
    c = np.array([1000.0, 1, 1, 1, 1])
    kw = {"steps": 60, "seed": 0, "dtype": "float64"}
    a = ExplainableMixture(4, **kw).fit(train.X, train.y)
    b = ExplainableMixture(4, **kw).fit(train.X * c, train.y)
    np.testing.assert_allclose(
        a.log_density(test.X, test.y), b.log_density(test.X * c, test.y), rtol=1e-9, atol=1e-9
    )


def test_multivariate_targets():
    train, test = split(planted(1200, targets=2, seed=4), 0.3, 4)
    est = ExplainableMixture(6, steps=300, seed=0).fit(train.X, train.y)
    truth = partition_log_density(
        test.X, test.y, [list(map(tuple, b)) for b in train.boxes], train.means, train.covs
    ).mean()
    assert est.score(test.X, test.y) > truth - 0.15
    assert len(est.rules_[0].mean) == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_rules": 0}, "n_rules: expected a positive int"),
        ({"n_rules": 2.5}, "n_rules"),
        ({"tau_start": -1.0}, "tau_start: expected a finite number > 0"),
        ({"tau_start": 0.1, "tau_end": 0.5}, "tau_end: expected <= tau_start"),
        ({"lam": float("nan")}, "lam"),
        ({"min_share": 1.0}, "min_share"),
        ({"dtype": "float16"}, "dtype"),
        ({"steps": 0}, "steps"),
    ],
)
def test_bad_config_raises(kwargs, match):
    est = ExplainableMixture(**kwargs)  # stored as given (scikit-learn's convention) ...
    X, y = np.random.default_rng(0).uniform(size=(40, 3)), np.arange(40.0)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)  # ... and checked by fit


def test_bad_data_raises():
    rng = np.random.default_rng(0)
    X, y = rng.uniform(size=(50, 3)), rng.normal(size=50)
    est = ExplainableMixture(2, steps=5)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"X: expected finite values, got nan at row 3, column 1"):
        est.fit(bad, y)
    with pytest.raises(ValueError, match="y: expected 50 rows"):
        est.fit(X, y[:40])
    const = X.copy()
    const[:, 2] = 1.0
    with pytest.raises(ValueError, match=r"X: column\(s\) \['x2'\] are constant"):
        est.fit(const, y)
    with pytest.raises(ValueError, match="X: expected at least one row"):
        est.fit(np.empty((0, 3)), np.empty(0))
    with pytest.raises(ValueError, match="feature_names: expected 3 strings"):
        est.fit(X, y, feature_names=["a", "b"])
    with pytest.raises(TypeError, match="X: expected a numeric array"):
        est.fit([["a", "b"]], [1.0])
    with pytest.raises(ValueError, match="not fitted"):
        est.score(X, y)
    est.fit(X, y)
    with pytest.raises(ValueError, match=r"X: expected 3 column\(s\)"):
        est.score(X[:, :2], y)
    with pytest.raises(ValueError, match="X: expected at least 2 \\* n_rules"):
        ExplainableMixture(40, steps=5).fit(X, y)


def test_marginal_mixture_matches_the_population_shares(planted_fit):
    est, _, test = planted_fit
    w = est.marginal_weights(test.X)
    assert w.shape == (4,) and abs(w.sum() - 1) < 1e-5  # float32 model
    # hard rules: the marginal weights are the shares of rows each rule covers
    counts = np.bincount(est.assign(test.X), minlength=4) / len(test.X)
    np.testing.assert_allclose(w, counts, atol=0.03)
    # the marginal density of y integrates to 1 over a grid
    grid = np.linspace(-8, 11, 4001)
    dens = np.exp(est.marginal_log_density(test.X, grid))
    assert abs(dens.sum() * (grid[1] - grid[0]) - 1) < 1e-3
