"""Bad input to the public API, in one table (issue 46's probe categories: NaN/inf, empty,
shapes, dtypes, ids/sizes/names, types): each case raises a ValueError/TypeError naming the
argument."""

from __future__ import annotations

import numpy as np
import pytest
from explainable_mixtures import ExplainableMixture
from explainable_mixtures.data import planted, split

from shared_core.testing import assert_bad_input

_TRAIN, _TEST = split(planted(200, seed=3), 0.3, 3)
_EST = ExplainableMixture(2, steps=5, prune_rounds=0).fit(_TRAIN.X, _TRAIN.y)
_X = _TEST.X
_Y = _TEST.y
_NAN_X = _X.copy()
_NAN_X[0, 0] = np.nan
_INF_Y = _Y.copy()
_INF_Y[0, 0] = np.inf
_D = _X.shape[1]

CASES = {
    # hyper-parameters (stored as given, checked by fit): sizes, names, types
    "zero rules": (lambda: ExplainableMixture(0).fit(_X, _Y), ValueError, "n_rules", "0"),
    "float rules": (lambda: ExplainableMixture(2.5).fit(_X, _Y), ValueError, "n_rules"),
    "string rules": (lambda: ExplainableMixture("3").fit(_X, _Y), ValueError, "n_rules", "'3'"),
    "unknown components": (
        lambda: ExplainableMixture(components="zzz").fit(_X, _Y),
        ValueError,
        "components",
    ),
    "NaN lam": (lambda: ExplainableMixture(lam=float("nan")).fit(_X, _Y), ValueError, "lam"),
    "negative lr": (lambda: ExplainableMixture(lr=-1.0).fit(_X, _Y), ValueError, "lr"),
    "tau_end above tau_start": (
        lambda: ExplainableMixture(tau_start=0.1, tau_end=0.5).fit(_X, _Y),
        ValueError,
        "tau_end",
    ),
    "unknown dtype": (lambda: ExplainableMixture(dtype="float16").fit(_X, _Y), ValueError, "dtype"),
    "bic_select not a bool": (
        lambda: ExplainableMixture(bic_select="yes").fit(_X, _Y),
        TypeError,
        "bic_select",
    ),
    "set_params unknown bic_count": (
        lambda: ExplainableMixture().set_params(bic_count="zzz").fit(_X, _Y),
        ValueError,
        "bic_count",
        "zzz",
    ),
    # fit: NaN / inf / empty / shapes / dtypes / types
    "fit on NaN X": (lambda: ExplainableMixture(2, steps=2).fit(_NAN_X, _Y), ValueError, "X"),
    "fit on inf y": (lambda: ExplainableMixture(2, steps=2).fit(_X, _INF_Y), ValueError, "y"),
    "fit on empty X": (
        lambda: ExplainableMixture(2, steps=2).fit(np.zeros((0, _D)), np.zeros((0, 1))),
        ValueError,
        "X",
    ),
    "fit with mismatched rows": (
        lambda: ExplainableMixture(2, steps=2).fit(_X, _Y[:-1]),
        ValueError,
        "y",
    ),
    "fit on 1-D X": (lambda: ExplainableMixture(2, steps=2).fit(_X[:, 0], _Y), ValueError, "X"),
    "fit on string X": (
        lambda: ExplainableMixture(2, steps=2).fit(np.full((4, 2), "a"), np.zeros(4)),
        TypeError,
        "X",
    ),
    "fit without y": (lambda: ExplainableMixture(2, steps=2).fit(_X, None), ValueError, "y"),
    "fit with too few feature names": (
        lambda: ExplainableMixture(2, steps=2).fit(_X, _Y, feature_names=["a"]),
        ValueError,
        "feature_names",
    ),
    # fitted methods
    "predict on NaN X": (lambda: _EST.predict(_NAN_X), ValueError, "X"),
    "predict on the wrong width": (lambda: _EST.predict(np.zeros((3, _D + 1))), ValueError, "X"),
    "predict on an empty batch": (lambda: _EST.predict(np.zeros((0, _D))), ValueError, "X"),
    "weights on a 1-D row": (lambda: _EST.weights(np.zeros(_D)), ValueError, "X"),
    "log_density on inf y": (lambda: _EST.log_density(_X, _INF_Y), ValueError, "y"),
    "log_density with mismatched rows": (lambda: _EST.log_density(_X, _Y[:-1]), ValueError, "y"),
    "score on the wrong y width": (
        lambda: _EST.score(_X, np.zeros((len(_X), 3))),
        ValueError,
        "y",
    ),
    "marginal_log_density on NaN y": (
        lambda: _EST.marginal_log_density(_X, np.full((2, _Y.shape[1]), np.nan)),
        ValueError,
        "y",
    ),
    "bic on NaN X": (lambda: _EST.bic(_NAN_X, _Y), ValueError, "X"),
    "predict before fit": (lambda: ExplainableMixture(2).predict(_X), ValueError, "fit"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])
