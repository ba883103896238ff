import numpy as np
import pytest
from mathmo import hypervolume, hypervolume_gain, non_dominated
from mathmo.reference import (
    dominates,
    hypervolume_inclusion_exclusion,
    hypervolume_slicing,
    non_dominated_naive,
)
from pymoo.indicators.hv import HV


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 2, 5, 10])
def test_hypervolume_matches_inclusion_exclusion(k: int, n: int) -> None:
    rng = np.random.default_rng(100 * k + n)
    for _ in range(5):
        y = rng.random((n, k))
        ref = rng.random(k) * 0.3
        assert abs(hypervolume(y, ref) - hypervolume_inclusion_exclusion(y, ref)) < 1e-9


@pytest.mark.parametrize("k", [2, 3, 4])
def test_hypervolume_equals_the_references_to_1e_12_on_random_fronts(k: int) -> None:
    """moocore (the default) against inclusion-exclusion (n <= 12) and HSO slicing (n = 40),
    on mutually non-dominated fronts (points on the sphere) and on random clouds."""
    rng = np.random.default_rng(10 + k)
    for trial in range(6):
        n = 12 if trial < 3 else 40
        y = rng.random((n, k))
        if trial % 2:
            y = np.abs(rng.standard_normal((n, k)))
            y /= np.linalg.norm(y, axis=1, keepdims=True)
        ref = rng.random(k) * 0.2
        ours = hypervolume(y, ref)
        oracle = hypervolume_inclusion_exclusion(y, ref) if n <= 12 else hypervolume_slicing(y, ref)
        assert abs(ours - oracle) < 1e-12, (k, n, ours, oracle)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_slicing_reference_matches_inclusion_exclusion(k: int) -> None:
    rng = np.random.default_rng(k)
    for n in (1, 5, 11):
        y = np.round(rng.random((n, k)), 1)  # ties and duplicates
        assert (
            abs(
                hypervolume_slicing(y, np.zeros(k))
                - hypervolume_inclusion_exclusion(y, np.zeros(k))
            )
            < 1e-12
        )


@pytest.mark.parametrize("k", [2, 3, 4])
def test_hypervolume_matches_pymoo(k: int) -> None:
    rng = np.random.default_rng(k)
    for n in (3, 20, 60):
        y = rng.random((n, k))
        theirs = HV(ref_point=np.zeros(k))(-y)  # pymoo minimises
        assert abs(hypervolume(y) - theirs) < 1e-9


def test_hypervolume_on_a_front_with_ties_and_known_value() -> None:
    # the DEPS.md check: {(1,4),(2,2),(4,1)} below ref (6,6) minimised = 20
    y = 6.0 - np.array([[1, 4], [2, 2], [4, 1]], dtype=float)
    assert hypervolume(y) == pytest.approx(20.0, abs=1e-12)
    dup = np.vstack([y, y[:1], [[0.5, 0.5]]])
    assert hypervolume(dup) == pytest.approx(20.0, abs=1e-12)


def test_hypervolume_gain_is_zero_for_dominated_and_positive_otherwise() -> None:
    front = np.array([[0.8, 0.2], [0.2, 0.8]])
    assert hypervolume_gain(front, np.array([0.1, 0.1])) == 0.0
    gain = hypervolume_gain(front, np.array([0.5, 0.5]))
    assert gain == pytest.approx(0.3 * 0.3, abs=1e-12)


def test_non_dominated_filter_properties() -> None:
    rng = np.random.default_rng(0)
    for k in (2, 3):
        y = np.round(rng.random((40, k)), 1)  # rounding plants ties and duplicates
        mask = non_dominated(y)
        np.testing.assert_array_equal(mask, non_dominated_naive(y))
        kept, removed = y[mask], y[~mask]
        for a in kept:
            assert not any(dominates(b, a) for b in kept)
        for r in removed:
            assert any(dominates(a, r) for a in kept)


@pytest.mark.parametrize(
    ("points", "ref", "error"),
    [
        (np.zeros(3), None, "2-D array"),
        (np.zeros((2, 0)), None, "at least one objective"),
        (np.array([[np.nan, 1.0]]), None, "finite"),
        (np.zeros((2, 2)), np.zeros(3), r"shape \(2,\)"),
    ],
)
def test_hypervolume_rejects_bad_input(
    points: np.ndarray, ref: np.ndarray | None, error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        hypervolume(points, ref)


def test_inclusion_exclusion_refuses_large_sets() -> None:
    with pytest.raises(ValueError, match="n <= 16"):
        hypervolume_inclusion_exclusion(np.zeros((17, 2)), np.zeros(2))


def test_points_check_is_exact_beyond_the_cheap_sum() -> None:
    """The finite check sums first: an overflowing sum of finite values still passes, and any
    NaN or inf is still refused."""
    from mathmo._checks import as_points

    big = np.full((3, 2), 1e308)
    assert as_points("points", big) is not None
    for bad in (np.nan, np.inf, -np.inf):
        y = big.copy()
        y[1, 0] = bad
        with pytest.raises(ValueError, match="points: expected finite values"):
            as_points("points", y)
