from __future__ import annotations

import math

import pytest
import torch
import vadd


def test_checkerboard():
    P = vadd.checkerboard(32)
    assert P.shape == (32, 32)
    assert math.isclose(float(P.sum()), 1.0, rel_tol=1e-5)
    assert math.isclose(vadd.entropy(P), math.log(32 * 32 / 2), rel_tol=1e-5)
    assert float(P[0, 0]) > 0 and float(P[0, 8]) == 0 and float(P[8, 8]) > 0
    # uniform marginals, log 2 nats of mutual information
    m = P.sum(1)
    assert torch.allclose(m, torch.full((32,), 1 / 32))
    mi = 2 * vadd.entropy(m) - vadd.entropy(P)
    assert math.isclose(mi, math.log(2), rel_tol=1e-4)


def test_gaussian_mixture():
    P = vadd.gaussian_mixture(32)
    assert math.isclose(float(P.sum()), 1.0, rel_tol=1e-5)
    assert torch.allclose(P, P.T, atol=1e-7)  # modes symmetric under x <-> y


def test_sample_table_and_histogram():
    P = vadd.checkerboard(8, cells=2)
    x = vadd.sample_table(P, 50000, torch.Generator().manual_seed(0))
    assert x.shape == (50000, 2) and int(x.max()) < 8
    assert vadd.total_variation(P, vadd.empirical_table(x, 8)) < 0.03
    a = vadd.sample_table(P, 10, torch.Generator().manual_seed(1))
    b = vadd.sample_table(P, 10, torch.Generator().manual_seed(1))
    assert torch.equal(a, b)


def test_bad_data_arguments():
    with pytest.raises(ValueError, match="bins"):
        vadd.checkerboard(1)
    with pytest.raises(ValueError, match="cells"):
        vadd.checkerboard(10, cells=4)
    with pytest.raises(ValueError, match="std"):
        vadd.gaussian_mixture(16, std=0.0)
    with pytest.raises(ValueError, match="P"):
        vadd.sample_table(torch.ones(3, 3), 5)
    with pytest.raises(ValueError, match="n"):
        vadd.sample_table(torch.ones(2, 2) / 4, 0)
