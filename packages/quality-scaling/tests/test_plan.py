from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import TRUE
from quality_scaling import plan


@pytest.mark.parametrize("Q", [1.0, 0.6])
def test_compute_optimal_matches_brute_force(Q: float) -> None:
    C = 1e21
    opt = plan.compute_optimal(TRUE, C, Q)
    ns = np.geomspace(opt["N"] / 30, opt["N"] * 30, 20001)
    losses = [plan.loss(TRUE, n, C / (6 * n), Q) for n in ns]
    assert ns[int(np.argmin(losses))] == pytest.approx(opt["N"], rel=1e-3)
    assert 6 * opt["N"] * opt["D"] == pytest.approx(C)
    assert opt["loss"] == pytest.approx(min(losses), rel=1e-9)


def test_cleaner_data_is_worth_more_data() -> None:
    D = 1e10
    d_noisy = plan.data_equivalent(TRUE, D, q_from=1.0, q_to=0.5)
    assert d_noisy > D
    assert plan.loss(TRUE, 1e8, d_noisy, 0.5) == pytest.approx(plan.loss(TRUE, 1e8, D, 1.0))
    assert plan.effective_data(TRUE, D, 0.5) == pytest.approx(
        D * 0.5 ** (TRUE["gamma"] / TRUE["beta"])
    )
    c2 = plan.compute_equivalent(TRUE, 1e21, 1.0, 0.5)
    assert plan.compute_optimal(TRUE, c2, 0.5)["loss"] == pytest.approx(
        plan.compute_optimal(TRUE, 1e21, 1.0)["loss"], rel=1e-10
    )


def test_required_model_size() -> None:
    n = plan.required_model_size(TRUE, 2.8, 1e11, 1.0)
    assert math.isfinite(n)
    assert plan.loss(TRUE, n, 1e11, 1.0) == pytest.approx(2.8)
    assert plan.required_model_size(TRUE, 2.8, 1e11, 0.5) > n
    assert math.isinf(plan.required_model_size(TRUE, 1.0, 1e11))


def test_bad_plan_input() -> None:
    with pytest.raises(ValueError, match="missing"):
        plan.compute_optimal({"A": 1.0}, 1e20)
    with pytest.raises(ValueError, match="C: expected"):
        plan.compute_optimal(TRUE, -1.0)
    with pytest.raises(ValueError, match="Q: expected"):
        plan.loss(TRUE, 1e6, 1e9, Q=float("nan"))
