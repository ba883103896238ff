"""Pruned generation: keep-all is bit-identical, restoration, scales before D, MACs monotone."""

from __future__ import annotations

import itertools

import pytest
import torch
from toprovar.generation import calibrate, count_macs, generate
from toprovar.model import TinyVAR
from toprovar.pruning import (
    Calibration,
    FastVARPolicy,
    PruningPolicy,
    SkipVARPolicy,
    ToProVARTopKPolicy,
    gather_tokens,
    restore_tokens,
    upsample_tokens,
)
from toprovar.vq import MultiScaleVQ


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
    return calibrate(var, vq, torch.arange(6) % 3, tau=0.0, min_depth=3, seed=5)


LABELS = torch.tensor([0, 1, 2, 1])


def test_keep_all_gather_restore_is_identity():
    x = torch.randn(2, 9, 4)
    assert gather_tokens(x, None) is x
    assert restore_tokens(x, None, None) is x
    idx = torch.arange(9).expand(2, 9)
    assert torch.equal(restore_tokens(gather_tokens(x, idx), idx, torch.zeros_like(x)), x)


def test_restore_puts_kept_tokens_back_and_fills_the_rest_from_the_cache():
    kept = torch.randn(1, 2, 3)
    idx = torch.tensor([[1, 3]])
    cached = torch.arange(12.0).view(1, 4, 3)  # a 2x2 map
    fallback = upsample_tokens(cached, 2, 2)
    out = restore_tokens(kept, idx, fallback)
    assert torch.equal(out[:, [1, 3]], kept) and torch.equal(out[:, [0, 2]], cached[:, [0, 2]])
    up = upsample_tokens(cached, 2, 4)  # area upsampling by 2 = each cell copied 2x2
    assert torch.equal(up.view(1, 4, 4, 3)[0, 0, 1], cached[0, 0])
    assert torch.equal(up.view(1, 4, 4, 3)[0, 3, 3], cached[0, 3])


def test_keep_everything_is_bit_identical_to_unpruned(models, calibration):
    var, vq = models
    ref = generate(var, vq, LABELS, seed=3)
    for policy in (
        PruningPolicy(),
        ToProVARTopKPolicy(calibration, 0.0, 0.0),  # P_keep = 1 everywhere
        FastVARPolicy({3: 0.0}),
    ):
        out = generate(var, vq, LABELS, policy, seed=3)
        assert torch.equal(out.images, ref.images), policy.name
        assert all(torch.equal(a, b) for a, b in zip(out.codes, ref.codes, strict=True))


def test_scales_before_depth_are_untouched(models, calibration):
    var, vq = models
    assert calibration.depth == 3
    ref = generate(var, vq, LABELS, seed=1)
    out = generate(var, vq, LABELS, ToProVARTopKPolicy(calibration, 0.9, 1.0), seed=1)
    for k in range(calibration.depth - 1):  # scales 1..D-1 (0-based 0..D-2)
        assert torch.equal(out.codes[k], ref.codes[k])
    assert not torch.equal(out.images, ref.images)


def test_calibration_ranges(calibration):
    assert ((calibration.rho >= 0) & (calibration.rho <= 1)).all()
    r = calibration.score[:, 1:]
    assert ((r > 0) & (r <= 1)).all() and torch.isnan(calibration.score[:, 0]).all()
    for lo, hi in ((0.0, 0.5), (0.3, 0.9)):
        for layer in range(3):
            for k in range(4):
                assert 0.0 <= calibration.keep_ratio(k, layer, lo, hi) <= 1.0


def _macs(models, policy, attention="blockwise") -> int:
    var, vq = models
    return count_macs(generate, var, vq, LABELS[:2], policy, attention=attention)[1]


def test_macs_non_increasing_in_pruning_ratio(models, calibration):
    base = _macs(models, PruningPolicy())
    fast = [_macs(models, FastVARPolicy({2: r, 3: r})) for r in (0.0, 0.5, 0.9)]
    assert fast[0] == base and all(a >= b for a, b in itertools.pairwise(fast))
    assert fast[-1] < base
    ours = [
        _macs(models, ToProVARTopKPolicy(calibration, lo, hi))
        for lo, hi in ((0.0, 0.0), (0.25, 0.75), (0.9, 1.0))
    ]
    assert ours[0] == base and all(a >= b for a, b in itertools.pairwise(ours))
    assert ours[-1] < base
    # sdpa's entropy: no product in the fused C++ kernel (as blockwise); the flash + pass
    # fallback pays one more product for it (its second pass over the scores)
    sdpa = _macs(models, ToProVARTopKPolicy(calibration, 0.0, 0.0), "sdpa")
    from toprovar import fused

    assert sdpa == base if fused.load(warn=False) is not None else sdpa > base
    assert _macs(models, SkipVARPolicy(1)) < _macs(models, FastVARPolicy({3: 0.9}))


def test_skipvar_decodes_the_accumulated_feature(models):
    var, vq = models
    ref = generate(var, vq, LABELS, seed=2)
    out = generate(var, vq, LABELS, SkipVARPolicy(1), seed=2)
    assert len(out.codes) == 3
    assert all(torch.equal(a, b) for a, b in zip(out.codes, ref.codes[:3], strict=False))
    assert torch.allclose(out.images, vq.decode(vq.fhat_from_codes(ref.codes[:3])))


def test_generation_is_seeded_and_batch_invariant(models, calibration):
    var, vq = models
    pol = ToProVARTopKPolicy(calibration, 0.5, 0.9)
    a = generate(var, vq, LABELS, pol, seed=4)
    b = generate(var, vq, LABELS, pol, seed=4)
    assert torch.equal(a.images, b.images)


def test_bad_arguments_raise(models, calibration):
    var, vq = models
    with pytest.raises(ValueError, match="labels: expected classes in 0..2"):
        generate(var, vq, torch.tensor([3]))
    with pytest.raises(TypeError, match="labels: expected int64"):
        generate(var, vq, torch.tensor([0.0]))
    with pytest.raises(ValueError, match="top_k: expected an int >= 0"):
        generate(var, vq, LABELS, top_k=-1)
    with pytest.raises(ValueError, match="cfg: expected a number in"):
        generate(var, vq, LABELS, cfg=-1.0)
    with pytest.raises(ValueError, match=r"drop\[3\]: expected a ratio in \[0, 1\)"):
        FastVARPolicy({3: 1.0})
    with pytest.raises(ValueError, match="drop: scale index 0 cannot be pruned"):
        FastVARPolicy({0: 0.5})
    with pytest.raises(ValueError, match="n_skip: expected a positive int"):
        SkipVARPolicy(0)
    with pytest.raises(TypeError, match="calibration: expected a Calibration"):
        ToProVARTopKPolicy(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a_max: expected >= a_min"):
        ToProVARTopKPolicy(calibration, 0.5, 0.2)
    with pytest.raises(ValueError, match="min_depth: expected >= 2"):
        calibrate(var, vq, LABELS, min_depth=1)
    with pytest.raises(ValueError, match="dense_layers: expected <= depth"):
        calibrate(var, vq, LABELS, dense_layers=9)
    with pytest.raises(TypeError, match="fn: expected a callable"):
        count_macs(3)


def test_top_k_one_and_tiny_top_p_are_both_greedy(models):
    var, vq = models
    a = generate(var, vq, LABELS, top_k=1, seed=0)
    b = generate(var, vq, LABELS, top_p=1e-9, seed=1)  # other random numbers, same argmax
    assert all(torch.equal(x, y) for x, y in zip(a.codes, b.codes, strict=True))


def test_mismatched_tokenizer_is_refused(models):
    var, _ = models
    other = MultiScaleVQ(hidden=8, latent=8, vocab=16, scales=(1, 2, 4), downsample=2)
    with pytest.raises(ValueError, match="var, vq: expected the same scales and vocab"):
        generate(var, other, LABELS)


@pytest.mark.parametrize("need_entropy", [False, True])
@pytest.mark.parametrize("method", ["sdpa", "blockwise"])
def test_attention_macs_do_not_depend_on_the_torch_flop_registry(method, need_entropy):
    # torch 2.13's FLOP counter has no formula for the fused CPU attention op (counts 0);
    # count_macs supplies its own, so every path counts Q K^T and A V: n_q n_k (d + d_v)
    from toprovar import fused
    from toprovar.entropy import attention_with_entropy

    b, h, n_q, n_k, d = 2, 3, 5, 7, 4
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(b, h, n, d, generator=g) for n in (n_q, n_k, n_k))
    _, macs = count_macs(attention_with_entropy, q, k, v, None, 128, need_entropy, method)
    attn = b * h * n_q * n_k * 2 * d
    # the 2nd pass of the flash + pass fallback; the fused C++ kernel (CPU) adds no product
    second_pass = method == "sdpa" and need_entropy and fused.load(warn=False) is None
    extra = b * h * n_q * n_k * d if second_pass else 0
    assert macs == attn + extra
