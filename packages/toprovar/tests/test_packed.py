"""The packed pruned layer (`toprovar.packed`) and the fused kernel's masked variant: equal to
the sublayer-by-sublayer path, to the unpruned generation where nothing is pruned, and to the
naive oracle with padding queries and masked keys."""

from __future__ import annotations

import math

import pytest
import torch
from toprovar import fused, reference
from toprovar.adaptive import ToProVARPolicy
from toprovar.generation import calibrate, count_macs, generate
from toprovar.model import TinyVAR
from toprovar.pruning import ToProVARTopKPolicy
from toprovar.vq import MultiScaleVQ

from shared_core.testing import assert_close

TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-5}
LABELS = torch.tensor([0, 1, 2, 1, 0, 2, 2, 1])


@pytest.fixture(scope="module")
def masked_op():
    op = fused.masked()
    if op is None:
        pytest.skip(f"the fused kernel is not available here: {fused.error()}")
    return op


@pytest.fixture(scope="module")
def models() -> tuple[TinyVAR, MultiScaleVQ]:
    torch.manual_seed(0)
    vq = MultiScaleVQ(hidden=8, latent=8, vocab=16, scales=(1, 2, 4, 8), downsample=2).eval()
    var = TinyVAR(vocab=16, latent=8, scales=(1, 2, 4, 8), num_classes=3, dim=32, depth=3, heads=2)
    for blk in var.blocks:
        torch.nn.init.normal_(blk.ada_lin.weight, std=0.3)
    return var.eval(), vq


@pytest.fixture(scope="module")
def calibration(models):
    var, vq = models
    return calibrate(var, vq, torch.arange(12) % 3, tau=None, min_depth=3, seed=5)


def _on(models, device, dtype):
    var, vq = models
    return var.to(device, dtype), vq.to(device, dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_masked_kernel_matches_naive_with_padding_and_masked_keys(masked_op, dtype):
    g = torch.Generator().manual_seed(0)
    b, h, nq, nk, d = 4, 3, 37, 1100, 8  # allowed keys in two blocks of 512
    q, k, v = (torch.randn(b, h, n, d, generator=g, dtype=torch.float64) for n in (nq, nk, nk))
    q_len = torch.tensor([37, 5, 0, 1])
    key_mask = torch.rand(b, nk, generator=g) < 0.6
    key_mask[3] = False
    key_mask[3, 1099] = True  # one allowed key
    out, ent, lse = masked_op(*(t.to(dtype) for t in (q, k, v)), 1 / math.sqrt(d), q_len, key_mask)
    ref_out, ref_h = reference.attention_entropy(q, k, v, key_mask[:, None, None, :])
    scores = (q @ k.transpose(-1, -2) / math.sqrt(d)).masked_fill(
        ~key_mask[:, None, None], -math.inf
    )
    ref_lse = torch.logsumexp(scores, -1)
    for row, n in enumerate(q_len.tolist()):
        if n:
            assert_close(f"out[{row}]", ref_out[row, :, :n], out[row, :, :n], TOLERANCE[dtype])
            assert_close(f"H[{row}]", ref_h[row, :, :n], ent[row, :, :n], TOLERANCE[dtype])
            assert_close(f"lse[{row}]", ref_lse[row, :, :n], lse[row, :, :n], TOLERANCE[dtype])
        assert bool((out[row, :, n:] == 0).all() and (ent[row, :, n:] == 0).all())  # padding
    assert_close("one key: H = 0", torch.zeros(h, 1), ent[3, :, :1].double(), 1.0, atol=1e-6)


def test_masked_kernel_reads_strided_views_like_contiguous_ones(masked_op):
    g = torch.Generator().manual_seed(1)
    qkv = torch.randn(3, 20, 3 * 16, generator=g, dtype=torch.float64)
    q, k, v = (t.view(3, 20, 2, 8).transpose(1, 2) for t in qkv.chunk(3, -1))  # last dim contiguous
    assert not q.is_contiguous()
    got = masked_op(q, k, v, 0.3, None, None)
    want = masked_op(q.contiguous(), k.contiguous(), v.contiguous(), 0.3, None, None)
    for a, b in zip(got, want, strict=True):
        assert torch.equal(a, b)
    assert_close("out", reference.attention_entropy(q * 0.3 * math.sqrt(8), k, v)[0], got[0], 1e-10)


def test_masked_kernel_refuses_a_row_without_keys(masked_op):
    q = k = v = torch.randn(2, 1, 3, 4)
    key_mask = torch.tensor([[True, True, True], [False, False, False]])
    with pytest.raises(RuntimeError, match="key_mask: every row with queries"):
        masked_op(q, k, v, 0.5, None, key_mask)
    masked_op(q, k, v, 0.5, torch.tensor([3, 0]), key_mask)  # no queries: nothing to attend


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("policy_cls", [ToProVARPolicy, ToProVARTopKPolicy])
def test_packed_pruned_generation_equals_the_sublayer_path(
    models, calibration, device, dtype, policy_cls
):
    var, vq = _on(models, device, dtype)
    labels = LABELS.to(device)
    runs = {}
    for packed in (True, False):
        policy = policy_cls(calibration, 0.5, 0.9)
        runs[packed] = (generate(var, vq, labels, policy, seed=3, packed=packed), policy)
    (new, pol_new), (old, pol_old) = runs[True], runs[False]
    assert_close("images", old.images.double(), new.images.double(), TOLERANCE[dtype])
    for k, (a, b) in enumerate(zip(old.codes, new.codes, strict=True)):
        assert torch.equal(a, b), f"scale {k}: the packed path sampled other tokens"
    if isinstance(pol_new, ToProVARPolicy):  # the same draws, depths and entropy maps
        counts = torch.stack([c for (k, _), c in pol_new.kept.items() if k == 3])
        assert bool((counts.amin(1) < counts.amax(1)).all())  # rows keep different numbers
        assert torch.equal(pol_new.depth, pol_old.depth)
        assert pol_new.kept.keys() == pol_old.kept.keys()
        for key in pol_new.maps:
            assert_close(f"map {key}", pol_old.maps[key], pol_new.maps[key], TOLERANCE[dtype])


def test_packed_path_without_the_kernel_equals_it(models, calibration, monkeypatch):
    """Where the kernel cannot run (CUDA, no compiler) the packed layer attends through
    `attend` with the key mask (SDPA without the entropy): the same generation."""
    var, vq = _on(models, "cpu", torch.float64)
    with_kernel = generate(var, vq, LABELS, ToProVARPolicy(calibration, 0.5, 0.9), seed=3)
    monkeypatch.setenv("TOPROVAR_FUSED", "0")
    assert fused.masked() is None
    without = generate(var, vq, LABELS, ToProVARPolicy(calibration, 0.5, 0.9), seed=3)
    assert_close("images", with_kernel.images, without.images, 1e-10)
    assert all(torch.equal(a, b) for a, b in zip(with_kernel.codes, without.codes, strict=True))


def test_keep_ratio_one_is_the_unpruned_generation_exactly(models, calibration):
    var, vq = _on(models, "cpu", torch.float32)
    ref = generate(var, vq, LABELS, seed=3)
    for packed in (True, False):
        got = generate(
            var, vq, LABELS, ToProVARPolicy(calibration, 0.0, 0.0), seed=3, packed=packed
        )
        assert torch.equal(ref.images, got.images)


def test_packed_macs_count_the_kept_tokens_only(models, calibration):
    """One image has no padding: both paths count the same MACs; in a batch the packed path
    counts each image's own kept tokens, so the batch costs the sum of its images."""
    var, vq = _on(models, "cpu", torch.float32)
    one = LABELS[:1]
    new = count_macs(generate, var, vq, one, ToProVARPolicy(calibration, 0.5, 0.9), seed=3)[1]
    old = count_macs(
        generate, var, vq, one, ToProVARPolicy(calibration, 0.5, 0.9), seed=3, packed=False
    )[1]
    dense = count_macs(generate, var, vq, one, None, seed=3)[1]
    assert new == old < dense
    policy = ToProVARPolicy(calibration, 0.5, 0.9)
    batch = count_macs(generate, var, vq, LABELS, policy, seed=3)[1]
    padded = count_macs(
        generate, var, vq, LABELS, ToProVARPolicy(calibration, 0.5, 0.9), seed=3, packed=False
    )[1]
    assert batch < padded  # the sublayer path's attention counts the padding
    assert batch < count_macs(generate, var, vq, LABELS, None, seed=3)[1]


@pytest.mark.cuda
def test_packed_generation_on_cuda_equals_cpu(models, calibration):
    """On CUDA the packed layer attends through SDPA with the key mask (no fused kernel)."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    out = {}
    for device in ("cpu", "cuda"):
        var, vq = _on(models, device, torch.float64)
        policy = ToProVARPolicy(calibration, 0.5, 0.9)
        out[device] = generate(var, vq, LABELS.to(device), policy, seed=3)
    assert_close("images", out["cpu"].images, out["cuda"].images.cpu(), 1e-10)
    for a, b in zip(out["cpu"].codes, out["cuda"].codes, strict=True):
        assert torch.equal(a, b.cpu())
