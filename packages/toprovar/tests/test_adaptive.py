"""The paper's adaptive policy: sampled keep (deterministic under a fixed generator, expected
count = sum P_keep), online R equal to an offline SVD of the same map, per-image depth."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from toprovar.adaptive import ToProVARPolicy, padded_indices, sample_keep
from toprovar.generation import calibrate, count_macs, generate
from toprovar.model import TinyVAR
from toprovar.pruning import Calibration, PruningPolicy, gather_tokens, restore_tokens
from toprovar.vq import MultiScaleVQ

from shared_core.testing import assert_close

LABELS = torch.tensor([0, 1, 2, 1, 0, 2])


@pytest.fixture(scope="module")
def models() -> tuple[TinyVAR, MultiScaleVQ]:
    torch.manual_seed(0)
    vq = MultiScaleVQ(hidden=8, latent=8, vocab=16, scales=(1, 2, 4, 8), downsample=2).eval()
    var = TinyVAR(vocab=16, latent=8, scales=(1, 2, 4, 8), num_classes=3, dim=32, depth=3, heads=2)
    for blk in var.blocks:
        torch.nn.init.normal_(blk.ada_lin.weight, std=0.3)
    return var.eval(), vq


@pytest.fixture(scope="module")
def calibration(models) -> Calibration:
    var, vq = models
    return calibrate(var, vq, torch.arange(12) % 3, tau=None, min_depth=3, seed=5)


def test_sampled_keep_count_has_expectation_sum_p_keep():
    g = torch.Generator().manual_seed(0)
    p = torch.linspace(0.0, 1.0, 101, dtype=torch.float64) ** 2  # planted P_keep
    draws = 4000
    keep = torch.stack([sample_keep(p, g) for _ in range(draws)]).double()
    se = math.sqrt(float((p * (1 - p)).sum()) / draws)
    assert abs(float(keep.sum(1).mean()) - float(p.sum())) < 4 * se
    freq_se = torch.sqrt(p * (1 - p) / draws).clamp(min=1e-12)
    assert bool(((keep.mean(0) - p).abs() <= 5 * freq_se).all())  # each token at its P_keep
    assert bool(keep[:, 0].eq(0).all()) and bool(keep[:, -1].eq(1).all())  # P = 0 and P = 1


def test_sampled_keep_is_deterministic_under_a_fixed_generator():
    p = torch.rand(4, 50, generator=torch.Generator().manual_seed(1))
    a = sample_keep(p, torch.Generator().manual_seed(7))
    b = sample_keep(p, torch.Generator().manual_seed(7))
    assert torch.equal(a, b)
    assert not torch.equal(a, sample_keep(p, torch.Generator().manual_seed(8)))


def test_padded_indices_round_trip():
    keep = torch.tensor([[True, False, True, True], [False, False, True, False]])
    idx = padded_indices(keep)
    assert idx.tolist() == [[0, 2, 3], [2, -1, -1]]
    x = torch.randn(2, 4, 3)
    fallback = torch.zeros_like(x)
    out = restore_tokens(gather_tokens(x, idx), idx, fallback)
    assert torch.equal(out[keep], x[keep]) and bool((out[~keep] == 0).all())
    assert padded_indices(torch.zeros(2, 3, dtype=torch.bool)).tolist() == [[-1], [-1]]


def test_adaptive_generation_is_deterministic_and_keep_all_is_unpruned(models, calibration):
    var, vq = models
    ref = generate(var, vq, LABELS, seed=3)
    pols = [ToProVARPolicy(calibration, 0.5, 0.9, seed=1) for _ in range(2)]
    a, b = (generate(var, vq, LABELS, pol, seed=3) for pol in pols)
    assert torch.equal(a.images, b.images)
    assert pols[0].kept.keys() == pols[1].kept.keys()
    assert all(torch.equal(pols[0].kept[key], pols[1].kept[key]) for key in pols[0].kept)
    assert not torch.equal(a.images, ref.images)
    other = ToProVARPolicy(calibration, 0.5, 0.9, seed=2)
    generate(var, vq, LABELS, other, seed=3)
    assert any(not torch.equal(other.kept[key], pols[0].kept[key]) for key in other.kept)
    full = generate(var, vq, LABELS, ToProVARPolicy(calibration, 0.0, 0.0), seed=3)
    assert torch.equal(full.images, ref.images)  # P_keep = 1 everywhere


def test_online_layer_score_equals_an_offline_svd_of_the_same_map(models, calibration):
    var, vq = models
    pol = ToProVARPolicy(calibration, 0.3, 0.8, seed=0)
    generate(var, vq, LABELS, pol, seed=0)
    checked = 0
    for (k, layer), online in pol.scores.items():
        prev = pol.maps[(k - 1, layer)].numpy()
        side = var.scales[k - 1]
        if side < 2:
            continue
        for i, row in enumerate(prev):
            s = np.linalg.svd(row.reshape(side, side), compute_uv=False)
            ref = math.exp(-calibration.beta * (s[0] / max(s[1], 1e-12 * s[0]) - 1.0))
            assert_close(f"R online k={k} l={layer} image {i}", ref, float(online[i]), 1e-10)
            checked += 1
    assert checked >= len(LABELS)
    assert pol.svd_seconds > 0


def test_depth_is_per_image_and_earlier_scales_are_untouched(models, calibration):
    var, vq = models
    ref = generate(var, vq, LABELS, seed=1)
    pol = ToProVARPolicy(calibration, 0.9, 1.0, seed=0)
    out = generate(var, vq, LABELS, pol, seed=1)
    assert pol.depth is not None and pol.depth.shape == (len(LABELS),)
    assert bool((pol.depth >= calibration.min_depth).all())
    for k in range(calibration.min_depth - 1):  # no image prunes before min_depth
        assert torch.equal(out.codes[k], ref.codes[k])
    for key, kept in pol.kept.items():  # images before their D keep every token
        n = var.scales[key[0]] ** 2
        early = pol.depth > key[0] + 1
        assert bool((kept[early] == n).all())


def test_calibrated_tau_prunes_the_requested_share(models):
    var, vq = models
    cal = calibrate(var, vq, torch.arange(12) % 3, tau=None, min_depth=3, prune_share=0.75)
    assert cal.rho_images is not None
    reached = (cal.rho_images[:, 2:] >= cal.tau).any(1).double().mean()
    assert float(reached) >= 0.75


def test_adaptive_macs_fall_with_the_budget(models, calibration):
    var, vq = models
    label = LABELS[:1]

    def macs(policy: PruningPolicy) -> int:
        return count_macs(generate, var, vq, label, policy, attention="blockwise")[1]

    base = macs(PruningPolicy())
    assert macs(ToProVARPolicy(calibration, 0.0, 0.0)) == base
    assert macs(ToProVARPolicy(calibration, 0.9, 1.0)) < base


def test_adaptive_bad_arguments_raise(calibration):
    with pytest.raises(TypeError, match="calibration: expected a Calibration"):
        ToProVARPolicy(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a_max: expected >= a_min"):
        ToProVARPolicy(calibration, 0.5, 0.2)
    with pytest.raises(TypeError, match="seed: expected an int"):
        ToProVARPolicy(calibration, seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="generator: expected a torch.Generator"):
        sample_keep(torch.ones(3), 0)  # type: ignore[arg-type]
