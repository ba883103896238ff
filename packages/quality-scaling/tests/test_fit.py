from __future__ import annotations

import numpy as np
import pytest
from conftest import TRUE, small_grid, synthetic
from quality_scaling.fit import (
    fit_chinchilla,
    fit_law,
    holdout_error,
    init_grid,
    objective,
    solve_batched,
)
from quality_scaling.laws import CHINCHILLA, QUALITY, ScalingData
from quality_scaling.reference import fit_law_reference, objective_reference
from quality_scaling.tables import EPOCH_DROPPED_RUNS, read_epoch_chinchilla

from shared_core.testing import assert_close


def test_epoch_grid_sizes() -> None:
    assert init_grid("chinchilla").shape == (4500, 5)
    assert init_grid("quality").shape == (22500, 6)
    assert set(init_grid("chinchilla")[:, 2]) == {-1.0, -0.5, 0.0, 0.5, 1.0}


def test_objective_matches_reference(rows: ScalingData) -> None:
    thetas = QUALITY.theta(TRUE) + np.random.default_rng(0).normal(0, 0.05, size=(8, 6))
    ref = [objective_reference(t, QUALITY, rows) for t in thetas]
    assert_close("objective", ref, objective(thetas, QUALITY, rows), 1e-12)


@pytest.mark.parametrize("law", [CHINCHILLA, QUALITY])
def test_batched_fit_reaches_the_reference_minimum(law) -> None:
    data = synthetic(law, n=30, noise=0.01, seed=3)
    grid = small_grid(law)[:: 20 if law is CHINCHILLA else 60]
    fast = fit_law(data, law, grid=grid)
    slow = fit_law_reference(data, law, grid=grid)
    # the summed Huber with delta = 1e-3 is kinked at every row: L-BFGS stops within ~1e-7 of
    # the minimum from different starts, so "the same minimum" means to 1e-6 relative
    assert fast.objective <= slow.objective * (1 + 1e-6)
    assert_close("theta", slow.theta, fast.theta, 1e-3)


def test_row_screening_reaches_the_unscreened_minimum() -> None:
    """Above `screen_rows` rows the starts are screened on a subsample first: same minimum."""
    data = synthetic(CHINCHILLA, n=700, noise=0.01, seed=8)
    grid = small_grid(CHINCHILLA)
    screened = fit_law(data, CHINCHILLA, grid=grid, screen_rows=100)
    full = fit_law(data, CHINCHILLA, grid=grid, screen_rows=None)
    assert screened.objective <= full.objective * (1 + 1e-9)
    assert_close("theta", full.theta, screened.theta, 1e-5)


def test_fit_chinchilla_is_fit_law_with_the_chinchilla_law() -> None:
    data = synthetic(CHINCHILLA, n=60, noise=0.005, seed=9)
    grid = small_grid(CHINCHILLA)
    a, b = fit_chinchilla(data, grid=grid), fit_law(data, "chinchilla", grid=grid)
    assert a.law is CHINCHILLA
    np.testing.assert_array_equal(a.theta, b.theta)


def test_batched_solver_descends_from_every_start(rows: ScalingData) -> None:
    grid = small_grid(QUALITY)
    theta, f = solve_batched(grid, QUALITY, rows, max_iter=20)
    assert np.all(f <= objective(grid, QUALITY, rows) + 1e-15)
    np.testing.assert_allclose(f, objective(theta, QUALITY, rows), rtol=1e-10)


@pytest.mark.parametrize("law", [CHINCHILLA, QUALITY])
def test_recovers_planted_parameters_within_bootstrap_ci(law) -> None:
    """Over 8 seeds, each 95% bootstrap CI holds the true value at least 6 times.

    With noise (1%) far above delta the fit is a median regression; a strict "every seed"
    check of 95% intervals would fail by chance in about a third of such runs. P(<= 5 of 8 |
    coverage 0.95) = 0.6%, so this fails when the intervals are too narrow or the fit biased.
    """
    hits: dict[str, int] = {}
    for seed in range(8):
        data = synthetic(law, n=100, noise=0.01, seed=seed)
        # a coarser grid than this misses the global minimum on some seeds (and this test fails)
        grid = small_grid(law) if law is CHINCHILLA else small_grid(law)[::3]
        fit = fit_law(data, law, grid=grid, n_bootstrap=100, seed=seed)
        truth = dict(TRUE, gamma_over_beta=TRUE["gamma"] / TRUE["beta"])
        for name, (lo, hi) in fit.ci.items():
            assert lo <= fit.derived()[name] <= hi
            hits[name] = hits.get(name, 0) + int(lo <= truth[name] <= hi)
    assert set(hits) == set(law.natural(law.theta(TRUE))) | (
        {"gamma_over_beta"} if law.uses_quality else set()
    )
    assert min(hits.values()) >= 6, hits


def test_noiseless_rows_are_fitted_exactly() -> None:
    data = synthetic(QUALITY, n=80, noise=0.0, seed=4)
    fit = fit_law(data, QUALITY, grid=small_grid(QUALITY))
    assert fit.params == pytest.approx(TRUE, rel=1e-4)
    assert holdout_error(fit, synthetic(QUALITY, n=50, noise=0.0, seed=5))["mape"] < 1e-6


def test_row_order_does_not_matter() -> None:
    rows = synthetic(n=100, seed=6)
    perm = np.random.default_rng(0).permutation(len(rows))
    a = fit_law(rows, QUALITY, grid=small_grid(QUALITY)[::3])
    b = fit_law(rows.subset(perm), QUALITY, grid=small_grid(QUALITY)[::3])
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-6, atol=1e-8)


def test_unit_rescaling_transforms_parameters() -> None:
    """N -> cN, D -> kD, Q -> qQ: A -> A c^alpha, B -> B k^beta q^gamma; exponents and E fixed."""
    rows = synthetic(n=100, seed=6)
    c, k, q = 1e-3, 10.0, 0.5
    a = fit_law(rows, QUALITY, grid=small_grid(QUALITY)[::3]).params
    scaled = ScalingData(rows.N * c, rows.D * k, rows.loss, rows.Q * q)
    b = fit_law(scaled, QUALITY, grid=small_grid(QUALITY)[::3]).params
    for name in ("E", "alpha", "beta", "gamma"):
        assert b[name] == pytest.approx(a[name], rel=1e-4)
    assert b["A"] == pytest.approx(a["A"] * c ** a["alpha"], rel=1e-3)
    assert b["B"] == pytest.approx(a["B"] * k ** a["beta"] * q ** a["gamma"], rel=1e-3)


def test_fit_is_deterministic_given_seed(rows: ScalingData) -> None:
    kw = {"grid": small_grid(QUALITY)[::3], "n_bootstrap": 20, "seed": 7}
    a, b = fit_law(rows, QUALITY, **kw), fit_law(rows, QUALITY, **kw)
    np.testing.assert_array_equal(a.samples, b.samples)


def test_bad_fit_input(rows: ScalingData) -> None:
    few = rows.subset(np.arange(6))
    with pytest.raises(ValueError, match="expected more rows than"):
        fit_law(few, QUALITY)
    with pytest.raises(TypeError, match="data: expected a ScalingData"):
        fit_law({"N": [1]}, QUALITY)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="two distinct Q"):
        fit_law(ScalingData(rows.N, rows.D, rows.loss), QUALITY)
    with pytest.raises(ValueError, match="delta"):
        fit_law(rows, QUALITY, delta=0.0)
    with pytest.raises(ValueError, match="ci: this fit has no bootstrap"):
        _ = fit_law(rows, QUALITY, grid=small_grid(QUALITY)[::9]).ci


EPOCH = {"E": 1.82, "A": 482.0, "B": 2085.0, "alpha": 0.348, "beta": 0.366}


def _epoch_path(shared_data):
    path = shared_data / "chinchilla_fig4_epoch.csv"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return path


def _epoch_rows(shared_data):
    return read_epoch_chinchilla(_epoch_path(shared_data))


def _check_epoch(fit) -> None:
    p = fit.params
    assert p["E"] == pytest.approx(EPOCH["E"], abs=0.02)
    assert p["alpha"] == pytest.approx(EPOCH["alpha"], abs=0.005)
    assert p["beta"] == pytest.approx(EPOCH["beta"], abs=0.005)
    assert p["A"] == pytest.approx(EPOCH["A"], rel=0.05)
    assert p["B"] == pytest.approx(EPOCH["B"], rel=0.10)


def test_recovers_epoch_chinchilla_fit(shared_data) -> None:
    data = _epoch_rows(shared_data)
    assert len(data) == 240 and EPOCH_DROPPED_RUNS == 5
    _check_epoch(fit_chinchilla(data, grid=small_grid(CHINCHILLA)))


def test_epoch_filter_drops_exactly_the_highest_losses(shared_data) -> None:
    path = _epoch_path(shared_data)
    raw, kept = read_epoch_chinchilla(path, drop_highest_loss=0), _epoch_rows(shared_data)
    assert len(raw) == 245
    assert kept.loss.max() < np.sort(raw.loss)[-5]
    np.testing.assert_array_equal(np.sort(kept.loss), np.sort(raw.loss)[:240])
    import csv

    with open(path, newline="") as f:
        flops = np.array([float(r["Training FLOP"]) for r in csv.DictReader(f)])
    np.testing.assert_allclose(6 * raw.N * raw.D, flops, rtol=1e-12)  # D = C / (6 N)


def test_unfiltered_epoch_data_gives_a_different_fit(shared_data) -> None:
    """Why the filter is the default: all 245 rows move beta to ~0.45 and E to ~1.89."""
    raw = read_epoch_chinchilla(_epoch_path(shared_data), drop_highest_loss=0)
    p = fit_chinchilla(raw, grid=small_grid(CHINCHILLA)).params
    assert p["beta"] == pytest.approx(0.453, abs=0.01)
    assert p["E"] == pytest.approx(1.89, abs=0.02)


@pytest.mark.slow
def test_recovers_epoch_chinchilla_fit_full_grid(shared_data) -> None:
    _check_epoch(fit_chinchilla(_epoch_rows(shared_data)))
