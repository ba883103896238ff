import math

import numpy as np
import pytest
from meld_diffusion.clashing import (
    clashing_curves,
    combine,
    constant_rates,
    pair_clash,
    permutation_closure,
    position_rates,
    uniform_rates,
)
from meld_diffusion.data import encode, small_qm9_graphs
from meld_diffusion.experiments.qm9 import HAND_RATES
from meld_diffusion.reference import clashing_curves_loop

from shared_core.data import mol_graph
from shared_core.testing import assert_close

TS = np.linspace(0.0, 1.0, 11)


@pytest.fixture(scope="module")
def small() -> dict[int, np.ndarray]:
    return {n: permutation_closure(rows, n) for n, rows in small_qm9_graphs(4).items()}


def test_closure_counts_relabellings():
    def closure(smiles: str, n: int) -> int:
        return len(permutation_closure(encode([mol_graph(smiles, kekulize=True)], n)[0], n))

    assert closure("CC", 2) == 1  # 2! / |Aut| = 2 / 2
    assert closure("CO", 2) == 2
    assert closure("CCO", 3) == 6  # no automorphism
    assert closure("CC(C)C", 4) == 4  # 4! / 3!: only the centre's label matters


@pytest.mark.parametrize("schedule", ["uniform", "hand"])
def test_fast_matches_the_state_by_state_loop(small, schedule):
    src = small[3]
    probs = uniform_rates(1e-3) if schedule == "uniform" else constant_rates(HAND_RATES, 3, 1e-3)
    fast, ref = clashing_curves(src, probs, TS), clashing_curves_loop(src, probs, TS)
    for name in ("clash", "entropy", "masked"):
        assert_close(name, getattr(ref, name), getattr(fast, name), 1e-12, atol=1e-15)


def test_limits(small):
    src = small[4]
    for probs in (uniform_rates(), constant_rates(HAND_RATES, 4)):
        c = clashing_curves(src, probs, np.array([0.0, 1.0]))
        assert c.entropy[0] == 0 and c.clash[0] == 0 and c.masked[0] == 0
        assert math.isclose(c.entropy[-1], math.log(len(src)), rel_tol=1e-12)
        assert math.isclose(c.clash[-1], 1.0, rel_tol=1e-12) and math.isclose(c.masked[-1], 1.0)


def test_per_element_schedule_clashes_less_at_equal_noise(small):
    """The issue's claim on the enumerable set: an element-wise schedule lowers the
    Bayes-optimal denoiser's entropy (and the clash probability), compared at the same
    expected fraction of masked elements."""
    weights = {n: float(len(small_qm9_graphs(4)[n])) for n in small}
    vanilla = combine(
        {n: clashing_curves(s, uniform_rates(), TS) for n, s in small.items()}, weights
    )
    per_type = combine(
        {n: clashing_curves(s, constant_rates(HAND_RATES, n), TS) for n, s in small.items()},
        weights,
    )
    assert per_type.area("entropy") < 0.9 * vanilla.area("entropy")
    assert per_type.area("clash") < vanilla.area("clash")
    # the same at matched noise, pointwise: interpolate vanilla at per_type's masked fractions
    inner = (per_type.masked > 0.05) & (per_type.masked < 0.95)
    v_at = np.interp(per_type.masked[inner], vanilla.masked, vanilla.entropy)
    assert np.all(per_type.entropy[inner] < v_at)


def test_uniform_schedule_posterior_is_uniform_over_compatible_sources(small):
    # with one mask probability for all, entropy = E[log #compatible sources]
    src = small[2]
    c = clashing_curves(src, uniform_rates(), np.array([0.5]))
    total = 0.0
    for subset in range(2 ** src.shape[1]):
        mask = np.array([(subset >> i) & 1 for i in range(src.shape[1])], dtype=bool)
        z = np.where(mask[None], 4, src)
        _, inv, counts = np.unique(z, axis=0, return_inverse=True, return_counts=True)
        total += 0.5 ** src.shape[1] * np.mean(np.log(counts[inv.reshape(-1)]))
    assert math.isclose(c.entropy[0], total, rel_tol=1e-12)


def test_argument_errors(small):
    src = small[2]
    with pytest.raises(ValueError, match="distinct"):
        clashing_curves(np.concatenate([src, src]), uniform_rates(), TS)
    with pytest.raises(ValueError, match="at most 16"):
        clashing_curves(np.zeros((2, 17), dtype=np.int64), uniform_rates(), TS)
    with pytest.raises(ValueError, match="mask_probs"):
        clashing_curves(src, lambda t, s: np.full(s.shape, 2.0), TS)
    with pytest.raises(ValueError, match="rates_by_value"):
        constant_rates((1.0, 2.0), 2)
    with pytest.raises(ValueError, match="rows: expected shape"):
        permutation_closure(np.zeros((1, 4), dtype=np.int64), 2)
    with pytest.raises(ValueError, match="same non-empty keys"):
        combine({}, {})


def test_position_rates_and_pair_clash(small):
    """A content-independent schedule keeps the posterior on each state uniform over the
    compatible sources (like vanilla) and matches the loop; pair clash = product over the
    differing elements."""
    src = small[3]
    L = src.shape[1]
    w = np.linspace(0.4, 3.0, L)
    fast = clashing_curves(src, position_rates(w), TS)
    ref = clashing_curves_loop(src, position_rates(w), TS)
    assert np.allclose(fast.entropy, ref.entropy, atol=1e-12)
    a, b = np.array([0, 1, 2, 0]), np.array([0, 3, 2, 1])
    p = np.array([0.1, 0.5, 0.2, 0.4])
    assert pair_clash(a, b, p) == pytest.approx(0.5 * 0.4)
    assert pair_clash(a, a, p) == 1.0
    with pytest.raises(ValueError, match="w: expected"):
        position_rates(np.array([1.0, -1.0]))
