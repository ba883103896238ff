from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import TRUE, synthetic
from hypothesis import given, settings
from hypothesis import strategies as st
from quality_scaling.laws import CHINCHILLA, QUALITY, ScalingData, get_law
from quality_scaling.reference import log_predict_reference

from shared_core.testing import assert_close


def test_predict_is_the_closed_form(rows: ScalingData) -> None:
    t = QUALITY.theta(TRUE)
    want = (
        TRUE["E"]
        + TRUE["A"] / rows.N ** TRUE["alpha"]
        + TRUE["B"] / (rows.D ** TRUE["beta"] * rows.Q ** TRUE["gamma"])
    )
    assert_close("predict", want, QUALITY.predict(t, rows), 1e-12)
    assert_close(
        "log_predict", log_predict_reference(t, QUALITY, rows), QUALITY.log_predict(t, rows), 1e-12
    )


def test_quality_law_at_q1_is_chinchilla(rows: ScalingData) -> None:
    clean = ScalingData(rows.N, rows.D, rows.loss)
    t = QUALITY.theta(TRUE)
    np.testing.assert_allclose(
        QUALITY.log_predict(t, clean), CHINCHILLA.log_predict(t[:5], clean), rtol=1e-14
    )


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=6, max_size=6))
def test_jacobian_matches_finite_differences(theta: list[float]) -> None:
    data = synthetic(n=7, seed=1)
    t = np.array(theta) + np.array([5.0, 6.0, 0.5, 0.3, 0.3, 0.5])
    _, jac = QUALITY.log_predict_and_jacobian(t, data)
    eps = 1e-6
    for p in range(6):
        d = np.zeros(6)
        d[p] = eps
        fd = (QUALITY.log_predict(t + d, data) - QUALITY.log_predict(t - d, data)) / (2 * eps)
        np.testing.assert_allclose(jac[:, p], fd, rtol=1e-5, atol=1e-8)


def test_natural_theta_round_trip() -> None:
    t = QUALITY.theta(TRUE)
    assert QUALITY.natural(t) == pytest.approx(TRUE, rel=1e-12)
    assert t[0] == pytest.approx(math.log(400.0))


def test_batched_predict_shapes(rows: ScalingData) -> None:
    thetas = np.stack([QUALITY.theta(TRUE)] * 3)
    assert QUALITY.log_predict(thetas, rows).shape == (3, len(rows))
    assert QUALITY.terms(thetas, rows).shape == (3, 3, len(rows))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"N": [1.0, -2.0], "D": [1.0, 1.0], "loss": [1.0, 1.0]}, "N: expected values > 0"),
        ({"N": [1.0, 2.0], "D": [0.0, 1.0], "loss": [1.0, 1.0]}, "D: expected values > 0"),
        ({"N": [1.0, 2.0], "D": [1.0, 1.0], "loss": [1.0, float("nan")]}, "loss: expected finite"),
        ({"N": [1.0, 2.0], "D": [1.0], "loss": [1.0, 1.0]}, "equal lengths"),
        ({"N": [[1.0]], "D": [1.0], "loss": [1.0]}, "1-D"),
        ({"N": [1.0], "D": [1.0], "loss": [1.0], "Q": [0.0]}, "Q: expected values > 0"),
    ],
)
def test_bad_rows_are_rejected(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ScalingData(**kwargs)


def test_bad_law_and_theta() -> None:
    with pytest.raises(ValueError, match="law: expected one of"):
        get_law("kaplan")
    with pytest.raises(ValueError, match="theta: expected shape"):
        QUALITY.natural([1.0, 2.0])
    with pytest.raises(ValueError, match="missing"):
        QUALITY.theta({"A": 1.0, "B": 1.0, "E": 1.0, "alpha": 0.1, "beta": 0.1})
