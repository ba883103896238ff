"""The data sets: shapes, determinism, the noise process, the bag-of-words counts."""

from __future__ import annotations

import importlib.util

import pytest
import torch
from paretovae.data import (
    bag_of_words,
    heavy_tailed_2d,
    noisy_digits,
    salt_and_pepper,
    scale_free_degrees,
)


def test_heavy_tailed_2d_is_seeded_and_heavy() -> None:
    a, b = heavy_tailed_2d(5000, seed=1), heavy_tailed_2d(5000, seed=1)
    assert a.shape == (5000, 2) and torch.equal(a, b)
    assert not torch.equal(a, heavy_tailed_2d(5000, seed=2))
    z = (a[:, 0] - a[:, 0].median()).abs() / a[:, 0].std()
    assert float((z > 5).float().mean()) > 1e-4  # beyond 5 sd: ~6e-7 for a Gaussian
    with pytest.raises(ValueError, match="num: expected an int >= 1"):
        heavy_tailed_2d(0)


@pytest.mark.skipif(
    importlib.util.find_spec("networkx") is None, reason="needs the 'experiments' extra"
)
def test_scale_free_degrees() -> None:
    raw = scale_free_degrees(500, seed=0, log1p=False)
    assert raw.shape == (500, 2) and float(raw.min()) >= 0
    assert float(raw[:, 0].sum()) == float(raw[:, 1].sum())  # every edge has two ends
    assert torch.allclose(scale_free_degrees(500, seed=0), torch.log1p(raw))
    with pytest.raises(ValueError, match="num_nodes: expected an int >= 3"):
        scale_free_degrees(2)


def test_bag_of_words_counts() -> None:
    counts, vocab = bag_of_words(["The cat and the hat.", "A cat's hat, the end"], 3)
    assert vocab[0] == "the" and counts.shape == (2, 3)
    assert float(counts[0, 0]) == 2.0 and float(counts[1, 0]) == 1.0
    again, _ = bag_of_words(["hat hat dog"], 3, vocab=vocab)
    assert float(again.sum()) == 2.0 * ("hat" in vocab)
    with pytest.raises(ValueError, match="vocab_size"):
        bag_of_words(["a"], 0)


def test_salt_and_pepper_rate_and_values() -> None:
    x = torch.full((200, 64), 0.3)
    y = salt_and_pepper(x, 0.5, torch.Generator().manual_seed(0))
    changed = y != x
    assert abs(float(changed.float().mean()) - 0.5) < 0.01
    assert set(torch.unique(y[changed]).tolist()) == {0.0, 1.0}
    assert abs(float((y[changed] == 1.0).float().mean()) - 0.5) < 0.02
    with pytest.raises(ValueError, match="p: expected a probability"):
        salt_and_pepper(x, 1.5, torch.Generator())
    with pytest.raises(ValueError, match="p: expected a probability"):
        salt_and_pepper(x, float("nan"), torch.Generator())
    with pytest.raises(
        ValueError, match=r"x: expected pixel values in \[0, 1\], got range \[0.3, 255"
    ):
        salt_and_pepper(torch.cat([x, torch.full((1, 64), 255.0)]), 0.5, torch.Generator())
    with pytest.raises(ValueError, match="x: contains NaN"):
        salt_and_pepper(torch.full((2, 64), float("nan")), 0.5, torch.Generator())


@pytest.mark.skipif(
    importlib.util.find_spec("sklearn") is None, reason="needs the 'experiments' extra"
)
def test_digits_in_unit_range() -> None:
    x, y = noisy_digits()
    assert (
        x.shape == (1797, 64) and float(x.min()) == 0.0 and float(x.max()) == 1.0 and len(y) == 1797
    )
