"""The tokenizer and the VAR: exact multi-scale round trip, block-causal information flow."""

from __future__ import annotations

import pytest
import torch
from toprovar.model import TinyVAR, block_causal_mask, sincos_2d
from toprovar.vq import MultiScaleVQ


@pytest.fixture
def vq() -> MultiScaleVQ:
    torch.manual_seed(0)
    return MultiScaleVQ(hidden=8, latent=8, vocab=16, scales=(1, 2, 4, 8), downsample=2).eval()


def test_vq_codes_reproduce_the_quantised_feature_exactly(vq):
    x = torch.rand(3, 1, 16, 16) * 2 - 1
    with torch.no_grad():
        f = vq.encoder(x)
        f_hat, codes, _ = vq.quantise(f)
        again = vq.fhat_from_codes(codes)
    assert [c.shape for c in codes] == [(3, pn * pn) for pn in (1, 2, 4, 8)]
    assert torch.equal(f_hat, again)
    # decoding is a function of the codes alone: the image of the codes is the reconstruction
    with torch.no_grad():
        rec, _, _ = vq(x)
    assert torch.allclose(rec, vq.decode(again), atol=1e-6)


def test_teacher_forcing_inputs_are_downsampled_partial_sums(vq):
    x = torch.rand(2, 1, 16, 16) * 2 - 1
    with torch.no_grad():
        _, codes, _ = vq.quantise(vq.encoder(x))
        inputs = vq.next_scale_inputs(codes)
        assert inputs.shape == (2, 4 + 16 + 64, 8)
        partial = vq.fhat_from_codes(codes[:2])  # scales 1 and 2 summed
        assert torch.equal(inputs[:, 4:20], vq.downsample(partial, 2))


def test_vq_has_gradients_through_the_straight_through_estimator(vq):
    x = torch.rand(2, 1, 16, 16) * 2 - 1
    rec, _, loss = vq.train()(x)
    (((rec - x) ** 2).mean() + loss).backward()
    assert vq.encoder[0].weight.grad is not None and vq.encoder[0].weight.grad.abs().sum() > 0
    assert vq.codebook.weight.grad is not None


def test_block_causal_mask_structure():
    m = block_causal_mask((1, 2, 3))
    assert m.shape == (14, 14)
    assert m[0, 0] and not m[0, 1]
    assert m[1:5, :5].all() and not m[1:5, 5:].any()
    assert m[5:, :].all()


def test_perturbing_a_scale_never_changes_earlier_logits():
    torch.manual_seed(0)
    var = TinyVAR(vocab=16, latent=8, scales=(1, 2, 4), num_classes=3, dim=32, depth=2, heads=2)
    for blk in var.blocks:  # non-zero gates so every branch carries signal
        torch.nn.init.normal_(blk.ada_lin.weight, std=0.5)
    var.eval()
    labels = torch.tensor([0, 2])
    inputs = torch.randn(2, 4 + 16, 8)
    base = var(labels, inputs)
    # inputs[:, 0:4] are the tokens of scale 2 (positions 1..4 of the sequence)
    bumped = inputs.clone()
    bumped[:, 0:4] += 10 * torch.randn(2, 4, 8)
    out = var(labels, bumped)
    assert torch.equal(out[:, :1], base[:, :1])  # scale 1 unchanged, bit for bit
    assert not torch.allclose(out[:, 1:5], base[:, 1:5])  # scale 2 itself changes
    # scale 3's tokens change nothing before them either
    bumped3 = inputs.clone()
    bumped3[:, 4:] += 10
    assert torch.equal(var(labels, bumped3)[:, :5], base[:, :5])


def test_sincos_positions_and_bad_sizes():
    p = sincos_2d(4, 16)
    assert p.shape == (16, 16) and torch.isfinite(p).all()
    with pytest.raises(ValueError, match="dim: expected a multiple of 4"):
        sincos_2d(4, 10)
    with pytest.raises(ValueError, match="dim: expected a multiple of heads"):
        TinyVAR(16, 8, (1, 2), 3, dim=30, heads=4)
    with pytest.raises(ValueError, match="scales: expected strictly increasing"):
        MultiScaleVQ(scales=(2, 1))
    with pytest.raises(ValueError, match="downsample: expected 1 or 2"):
        MultiScaleVQ(downsample=3)
