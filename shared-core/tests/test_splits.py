import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from shared_core.data import batches, group_split, split_indices


@given(n=st.integers(3, 500), seed=st.integers(0, 10_000))
def test_split_partitions_and_is_seeded(n, seed):
    parts = split_indices(n, (0.6, 0.2, 0.2), seed)
    allidx = np.concatenate(parts)
    assert sorted(allidx.tolist()) == list(range(n))
    again = split_indices(n, (0.6, 0.2, 0.2), seed)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True))


def test_split_sizes():
    a, b = split_indices(1000, (0.9, 0.1), 0)
    assert (len(a), len(b)) == (900, 100)


@pytest.mark.parametrize("fractions", [(0.5, 0.6), (1.0,), (0.5, -0.1, 0.6)])
def test_bad_fractions(fractions):
    with pytest.raises(ValueError, match="fractions"):
        split_indices(10, fractions)


def test_group_split_keeps_groups_together():
    groups = np.repeat(np.arange(50), 2)
    train, test = group_split(groups, (0.8, 0.2), seed=1)
    assert set(groups[train]).isdisjoint(groups[test])
    assert len(train) + len(test) == 100


def test_batches_align_and_cover():
    x = np.arange(10)
    y = torch.arange(10) * 2
    seen = []
    for bx, by in batches(x, y, batch_size=3, seed=0):
        assert np.array_equal(by.numpy(), bx * 2)
        seen.extend(bx.tolist())
    assert sorted(seen) == list(range(10))
    assert [len(b[0]) for b in batches(x, batch_size=3, drop_last=True)] == [3, 3, 3]


def test_batches_bad_input():
    with pytest.raises(ValueError, match="length"):
        next(batches(np.arange(3), np.arange(4), batch_size=2))
    with pytest.raises(ValueError, match="batch_size"):
        next(batches(np.arange(3), batch_size=0))
