"""``sampler="ddpm"`` on the GeoDiff network diverges with an accurate score (README, the gate
section): building that combination warns, naming both; the others are silent."""

from __future__ import annotations

import warnings

import pytest
from msgen.diffusion import DiffusionConfig, GeoDiffDDPMWarning


def test_ddpm_on_geodiff_warns_naming_both():
    with pytest.warns(GeoDiffDDPMWarning, match=r"sampler='ddpm'.*network='geodiff'.*diverges"):
        DiffusionConfig(network="geodiff", sampler="ddpm")


@pytest.mark.parametrize(("network", "sampler"), [("geodiff", "ld"), ("egnn", "ddpm")])
def test_the_other_combinations_are_silent(network, sampler):
    with warnings.catch_warnings():
        warnings.simplefilter("error", GeoDiffDDPMWarning)
        DiffusionConfig(network=network, sampler=sampler)
