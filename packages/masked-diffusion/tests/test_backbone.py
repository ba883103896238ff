import copy

import pytest
import torch
from masked_diffusion import BackboneConfig, MaskedDiffusionTransformer

from shared_core.testing import assert_close


def test_shapes_and_dtypes(small_model):
    x = torch.randint(0, 8, (3, 12))
    out = small_model(x, torch.rand(3))
    assert out.shape == (3, 12, 7) and out.dtype == torch.float32


def test_zero_cond_equals_no_cond(small_model):
    x = torch.randint(0, 8, (3, 12))
    torch.nn.init.normal_(small_model.cond_proj.weight)
    torch.nn.init.zeros_(small_model.cond_proj.bias)
    for blk in small_model.blocks:
        torch.nn.init.normal_(blk.ada.weight, std=0.3)  # a "trained" adaLN
    base = small_model(x)
    torch.testing.assert_close(small_model(x, cond=torch.zeros(3, 5)), base, rtol=0, atol=0)
    assert not torch.allclose(small_model(x, cond=torch.randn(3, 5)), base)
    # per-token cond
    assert not torch.allclose(small_model(x, cond=torch.randn(3, 12, 5)), base)


def test_zero_initialised_cond_path_is_a_noop():
    torch.manual_seed(0)
    m = MaskedDiffusionTransformer(BackboneConfig(7, 12, 32, 2, 2, d_cond=5)).eval()
    torch.nn.init.normal_(m.head.weight, std=0.5)
    x = torch.randint(0, 8, (2, 12))
    torch.testing.assert_close(m(x, cond=torch.randn(2, 5)), m(x), rtol=0, atol=0)


def test_bidirectional_and_positional(small_model):
    x = torch.randint(0, 7, (1, 12))
    y = x.clone()
    y[0, -1] = (y[0, -1] + 1) % 7
    # changing the last token changes the first output (no causal mask)
    assert not torch.allclose(small_model(x)[0, 0], small_model(y)[0, 0])
    # RoPE is relative: a constant input gives the same output everywhere...
    same = torch.full((1, 12), 3)
    out = small_model(same)[0]
    torch.testing.assert_close(out[0], out[5])
    # ...but a token's output depends on where its neighbours are
    z = torch.full((1, 12), 3)
    z[0, 0] = 1
    o2 = small_model(z)[0]
    assert not torch.allclose(o2[2], o2[8])


def test_learned_positions_break_translation_symmetry():
    torch.manual_seed(0)
    m = MaskedDiffusionTransformer(BackboneConfig(7, 12, 32, 2, 1, learned_positions=True)).eval()
    torch.nn.init.normal_(m.head.weight, std=0.5)
    out = m(torch.full((1, 12), 7))[0]
    assert not torch.allclose(out[0], out[5])


def test_grid_rope_and_time_conditioning():
    torch.manual_seed(0)
    m = MaskedDiffusionTransformer(
        BackboneConfig(4, 64, 32, 2, 1, grid=(8, 8), time_conditioning=True)
    ).eval()
    torch.nn.init.normal_(m.head.weight, std=0.5)
    for p in (m.blocks[0].ada.weight, m.ada_f.weight):
        torch.nn.init.normal_(p, std=0.3)
    x = torch.randint(0, 5, (2, 64))
    a, b = m(x, torch.tensor([0.1, 0.1])), m(x, torch.tensor([0.9, 0.9]))
    assert a.shape == (2, 64, 4) and not torch.allclose(a, b)


def test_gradients_reach_every_parameter(small_model):
    small_model.train()
    out = small_model(torch.randint(0, 8, (2, 12)), cond=torch.randn(2, 5))
    out.square().mean().backward()
    for name, p in small_model.named_parameters():
        assert p.grad is not None, name


def test_bad_input(small_model):
    with pytest.raises(ValueError, match="x_t"):
        small_model(torch.randint(0, 7, (2, 11)))
    with pytest.raises(ValueError, match="x_t"):
        small_model(torch.full((2, 12), 8))
    with pytest.raises(TypeError, match="x_t"):
        small_model(torch.zeros(2, 12))
    with pytest.raises(ValueError, match="cond"):
        small_model(torch.zeros(2, 12).long(), cond=torch.zeros(2, 4))
    with pytest.raises(ValueError, match="cond"):
        small_model(torch.zeros(2, 12).long(), cond=torch.full((2, 5), float("nan")))
    with pytest.raises(ValueError, match="t"):
        small_model(torch.zeros(2, 12).long(), t=torch.zeros(3))
    with pytest.raises(ValueError, match="n_heads"):
        BackboneConfig(7, 12, 30, 4)
    with pytest.raises(ValueError, match="n_heads"):
        BackboneConfig(7, 12, 32, 0)
    with pytest.raises(ValueError, match="dropout"):
        BackboneConfig(7, 12, 32, 2, dropout=2.0)
    with pytest.raises(ValueError, match="x_t: expected a non-empty batch"):
        small_model(torch.zeros(0, 12).long())
    with pytest.raises(ValueError, match="grid"):
        BackboneConfig(7, 12, 32, 2, grid=(3, 3))
    no_cond = MaskedDiffusionTransformer(BackboneConfig(7, 12, 32, 2, 1))
    with pytest.raises(ValueError, match="cond"):
        no_cond(torch.zeros(1, 12).long(), cond=torch.zeros(1, 5))


@pytest.mark.parametrize(
    "dtype,ratio", [(torch.float64, 1e-10), (torch.float32, 1e-5), (torch.bfloat16, 1e-2)],
    ids=["f64", "f32", "bf16"],
)  # fmt: skip
@pytest.mark.parametrize("kind", ["plain", "grid+time+cond"])
def test_forward_in_each_dtype_matches_float64(device, dtype, ratio, kind):
    """The denoiser on `device` in float64/float32/bfloat16 vs the same weights in float64 on CPU."""
    torch.manual_seed(0)
    if kind == "plain":
        cfg = BackboneConfig(7, 16, 32, 2, 2)
    else:
        cfg = BackboneConfig(7, 16, 32, 2, 2, grid=(4, 4), time_conditioning=True, d_cond=5)
    ref_model = MaskedDiffusionTransformer(cfg).double().eval()
    for p in ref_model.parameters():  # "trained" weights: every path contributes
        torch.nn.init.normal_(p, std=0.3)
    fast_model = copy.deepcopy(ref_model).to(device=device, dtype=dtype)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 8, (3, 16), generator=g)
    t = torch.rand(3, generator=g, dtype=torch.float64)
    cond = torch.randn(3, 5, generator=g, dtype=torch.float64) if kind != "plain" else None
    # times stay float32 at least: a bfloat16 t has 3 significant digits, and the sinusoidal
    # embedding multiplies it by 1000
    t_fast = t.to(device, torch.promote_types(dtype, torch.float32))
    with torch.no_grad():
        ref = ref_model(x, t, cond=cond)
        fast = fast_model(
            x.to(device), t_fast, cond=None if cond is None else cond.to(device, dtype)
        )
    assert fast.dtype == dtype
    assert_close(f"logits {kind} {dtype}", ref, fast, ratio)
