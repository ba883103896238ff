"""Scale, layer and token statistics of ToProVAR against the reference and their ranges."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from toprovar import reference
from toprovar.entropy import (
    keep_probability,
    layer_score,
    normalise_entropy,
    pruning_depth,
    scale_sparsity,
    spectral_ratio,
)


def test_scale_sparsity_matches_reference_and_is_a_share():
    g = torch.Generator().manual_seed(0)
    for n in (1, 2, 7, 64):
        h = torch.rand(5, n, generator=g, dtype=torch.float64) * 3
        rho = scale_sparsity(h)
        assert ((rho >= 0) & (rho <= 1)).all()
        for row, r in zip(h, rho, strict=True):
            assert float(r) == pytest.approx(reference.scale_sparsity(row.numpy()))
    assert float(scale_sparsity(torch.ones(1, 9))[0]) == 0.0  # nothing below a constant's mean


def test_pruning_depth_is_first_scale_over_tau():
    rho = torch.tensor([0.0, 0.3, 0.6, 0.5, 0.7])
    assert pruning_depth(rho, 0.55) == 3
    assert pruning_depth(rho, 0.0) == 1
    assert pruning_depth(rho, 0.9) == 6  # never: past the last scale
    with pytest.raises(ValueError, match="tau: expected a number in"):
        pruning_depth(rho, 1.5)


def test_layer_score_matches_reference_and_range():
    g = torch.Generator().manual_seed(1)
    maps = torch.rand(20, 4, 4, generator=g, dtype=torch.float64)
    r = layer_score(maps, beta=0.7)
    assert ((r > 0) & (r <= 1)).all()
    for m, ri in zip(maps, r, strict=True):
        assert float(ri) == pytest.approx(reference.layer_score(m.numpy(), 0.7), rel=1e-12)
    # rank one: sigma_2 = 0 -> huge ratio, R tiny but positive
    rank_one = torch.outer(torch.arange(1.0, 5.0), torch.arange(1.0, 5.0)).double()
    r1 = layer_score(rank_one, beta=5.0)
    assert 0 < float(r1) < 1e-100


def test_layer_score_is_one_iff_top_two_singular_values_equal():
    equal = torch.diag(torch.tensor([2.0, 2.0, 1.0], dtype=torch.float64))
    assert float(layer_score(equal, beta=3.0)) == 1.0
    unequal = torch.diag(torch.tensor([2.0, 1.999, 1.0], dtype=torch.float64))
    assert float(layer_score(unequal, beta=3.0)) < 1.0
    assert float(spectral_ratio(equal)) == 1.0


def test_normalised_entropy_in_unit_interval():
    g = torch.Generator().manual_seed(2)
    h = torch.randn(3, 50, generator=g) * 4
    hh = normalise_entropy(h)
    assert float(hh.min()) == 0.0 and float(hh.max()) == 1.0
    assert torch.equal(normalise_entropy(torch.full((2, 5), 3.0)), torch.zeros(2, 5))


@pytest.mark.parametrize("scale", [1, 2, 3, 4, 5])
def test_keep_probability_matches_reference(scale):
    g = torch.Generator().manual_seed(scale)
    hh = torch.rand(40, generator=g, dtype=torch.float64)
    p = keep_probability(hh, scale, 5, 3, 0.8, 0.1, 0.9)
    ref = reference.keep_probability(hh.numpy(), scale, 5, 3, 0.8, 0.1, 0.9)
    assert np.allclose(p.numpy(), ref, atol=1e-15)
    q = (scale / 5) * 0.8 * hh
    assert ((q >= 0) & (q <= 1)).all()
    assert ((p >= 0) & (p <= 1)).all()
    if scale < 3:  # scales before D are untouched
        assert torch.equal(p, torch.ones_like(p))


def test_keep_probability_decreases_with_entropy_and_a_max():
    hh = torch.linspace(0, 1, 11, dtype=torch.float64)
    p = keep_probability(hh, 5, 5, 2, 1.0, 0.0, 0.9)
    assert (p.diff() <= 0).all() and float(p[0]) == 1.0 and float(p[-1]) == pytest.approx(0.1)
    lo = keep_probability(hh, 5, 5, 2, 1.0, 0.0, 0.5)
    assert (lo >= p).all()


def test_statistics_bad_inputs_raise():
    with pytest.raises(ValueError, match="entropy_map: expected"):
        layer_score(torch.ones(1, 4), beta=1.0)
    with pytest.raises(ValueError, match="beta: expected a number in"):
        layer_score(torch.eye(3), beta=-1.0)
    with pytest.raises(ValueError, match="a_max: expected >= a_min"):
        keep_probability(torch.zeros(3), 2, 5, 1, 1.0, 0.5, 0.2)
    with pytest.raises(ValueError, match="scale: expected 1..n_scales"):
        keep_probability(torch.zeros(3), 6, 5, 1, 1.0, 0.0, 0.2)
    with pytest.raises(TypeError, match="a_min: expected a finite number"):
        keep_probability(torch.zeros(3), 2, 5, 1, 1.0, float("nan"), 0.2)
    with pytest.raises(ValueError, match="entropy: expected"):
        scale_sparsity(torch.zeros(3, 0))
