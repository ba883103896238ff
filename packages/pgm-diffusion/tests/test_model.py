import copy

import pytest
import torch
from conftest import make_model
from hypothesis import given, settings
from hypothesis import strategies as st
from pgm import PGMConfig, masked_attention
from pgm.model import PRE_QUERY_MODES
from pgm.reference import partition_logits_loop

from shared_core.testing import assert_close

DTYPES = [(torch.float64, 1e-10), (torch.float32, 1e-5), (torch.bfloat16, 2e-2)]


@pytest.mark.parametrize("grid", [False, True], ids=["1d", "grid+residual"])
@pytest.mark.parametrize("mode", PRE_QUERY_MODES)
def test_full_forward_equals_dense_per_group_reference(mode, grid):
    m = make_model(mode, grid=grid, residual=grid)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 7, (4, 12), generator=g)
    groups = torch.rand(4, 12, generator=g) < 0.5
    groups[2] = True  # group 0 is BOS alone
    groups[3] = False  # group 1 empty: group 0 sees nothing
    assert_close(f"full vs loop {mode}", partition_logits_loop(m, x, groups), m(x, groups), 1e-5)


def _low_precision(m: torch.nn.Module, device: str, dtype: torch.dtype) -> torch.nn.Module:
    return copy.deepcopy(m).to(device=device, dtype=dtype)


@pytest.mark.parametrize("dtype,ratio", DTYPES, ids=["f64", "f32", "bf16"])
@pytest.mark.parametrize("mode", PRE_QUERY_MODES)
def test_full_forward_in_each_dtype_matches_float64_loop(device, dtype, ratio, mode):
    """Masked full-length forward on `device` in `dtype` vs the dense per-group loop in float64."""
    m = make_model(mode).double()
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 7, (4, 12), generator=g)
    groups = torch.rand(4, 12, generator=g) < 0.5
    groups[2], groups[3] = True, False  # BOS alone / group 1 empty
    ref = partition_logits_loop(m, x, groups)
    with torch.no_grad():
        fast = _low_precision(m, device, dtype)(x.to(device), groups.to(device))
    assert fast.dtype == dtype
    assert_close(f"full forward {mode} {dtype}", ref, fast, ratio)


@pytest.mark.parametrize("dtype,ratio", DTYPES, ids=["f64", "f32", "bf16"])
def test_packed_forward_in_each_dtype_matches_float64_full(device, dtype, ratio):
    """The packed (clean tokens only) pass on `device` in `dtype` vs the float64 full pass."""
    m = make_model().double()
    g = torch.Generator().manual_seed(2)
    x = torch.randint(0, 7, (3, 12), generator=g)
    groups = torch.rand(3, 12, generator=g) < 0.6
    groups[:, 0] = True
    groups[:, 1] = False  # both groups non-empty in every row
    with torch.no_grad():
        full = m(x, groups)
        fast_model = _low_precision(m, device, dtype)
        for i in range(3):
            clean = (~groups[i]).nonzero().flatten()[None]
            query = groups[i].nonzero().flatten()[None]
            packed = fast_model.forward_packed(
                x[i : i + 1, clean[0]].to(device), clean.to(device), query.to(device)
            )
            assert_close(f"packed row {i} {dtype}", full[i : i + 1, query[0]], packed, ratio)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    p=st.floats(0.05, 0.95),
    mode=st.sampled_from(PRE_QUERY_MODES),
    grid=st.booleans(),
    residual=st.booleans(),
)
def test_partition_isolation_by_autograd(seed, p, mode, grid, residual):
    """Logits of group B have exactly zero gradient w.r.t. the embeddings of group B tokens."""
    m = make_model(mode, seed=seed % 3, grid=grid, residual=residual)
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 7, (2, 12), generator=g)
    groups = torch.rand(2, 12, generator=g) < p
    bos = torch.full((2, 1), m.bos_id)
    h = m.embed(torch.cat([bos, x], 1)).detach().requires_grad_(True)
    logits = m.forward_embedded(h, groups)
    w = torch.randn(logits.shape, generator=g)
    g_model = torch.cat([torch.zeros(2, 1, dtype=torch.bool), groups], 1)  # BOS in group 0
    for grp in (True, False):
        sel = (groups == grp)[..., None]
        if not sel.any():
            continue
        (grad,) = torch.autograd.grad((logits * w * sel).sum(), h, retain_graph=True)
        same = g_model == grp
        assert torch.all(grad[same] == 0), "a group sees its own tokens"
        other = ~same
        if other.any():  # the prediction does use the other group
            assert grad[other].abs().sum() > 0


@pytest.mark.parametrize("grid", [False, True], ids=["1d", "grid+residual"])
def test_packed_equals_full_length_forward(grid):
    model = make_model(grid=grid, residual=grid)
    g = torch.Generator().manual_seed(2)
    x = torch.randint(0, 7, (3, 12), generator=g)
    groups = torch.rand(3, 12, generator=g) < 0.6
    full = model(x, groups)
    for i in range(3):
        clean_pos = (~groups[i]).nonzero().flatten()[None]
        query_pos = groups[i].nonzero().flatten()[None]
        packed = model.forward_packed(x[i : i + 1, clean_pos[0]], clean_pos, query_pos)
        assert_close("packed vs full", full[i : i + 1, query_pos[0]], packed, 1e-5)
        # permuting the packed clean tokens (positions kept) changes nothing
        perm = torch.randperm(clean_pos.shape[1], generator=g)
        shuffled = model.forward_packed(
            x[i : i + 1, clean_pos[0, perm]], clean_pos[:, perm], query_pos
        )
        assert_close("shuffled vs packed", packed, shuffled, 1e-5)


@pytest.mark.parametrize("mode", ["learn+freqs", "learn+freqs+mean", "learn+freqs+logsumexp"])
def test_packed_padding_is_ignored(mode):
    m = make_model(mode)
    x = torch.randint(0, 7, (2, 5))
    pos = torch.tensor([[0, 3, 4, 7, 9], [1, 2, 5, 0, 0]])
    valid = torch.tensor([[True] * 5, [True, True, True, False, False]])
    q = torch.tensor([[1, 2], [3, 11]])
    both = m.forward_packed(x, pos, q, clean_valid=valid)
    alone = m.forward_packed(x[1:, :3], pos[1:, :3], q[1:])
    torch.testing.assert_close(both[1:], alone, atol=1e-5, rtol=0)


def test_empty_clean_set_is_bos_only(model):
    q = torch.arange(12)[None]
    empty = torch.zeros(1, 0, dtype=torch.long)
    a = model.forward_packed(empty, empty, q)
    b = model(torch.zeros(1, 12, dtype=torch.long), torch.ones(1, 12, dtype=torch.bool))
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


def test_untrained_model_is_uniform():
    from pgm import PartitionTransformer

    m = PartitionTransformer(PGMConfig(5, 4, 16, 2, 1, 1))
    out = m(torch.zeros(2, 4, dtype=torch.long), torch.rand(2, 4) < 0.5)
    assert out.shape == (2, 4, 5) and torch.all(out == 0)


def test_masked_attention_empty_rows_are_zero_and_masked_keys_ignored():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 3, 4, generator=g) for _ in range(3))
    allow = torch.tensor([[[True, False, True], [False, False, False], [False, True, False]]])
    out = masked_attention(q, k, v, allow)
    assert torch.all(out[:, :, 1] == 0)
    torch.testing.assert_close(out[:, :, 2], v[:, :, 1])
    s = (q[:, :, 0:1] @ k[:, :, [0, 2]].transpose(-1, -2)) / 2.0
    torch.testing.assert_close(out[:, :, 0:1], s.softmax(-1) @ v[:, :, [0, 2]])


def test_bad_inputs(model):
    x = torch.randint(0, 7, (2, 12))
    groups = torch.rand(2, 12) < 0.5
    with pytest.raises(ValueError, match="x0"):
        model(torch.full((2, 12), 7), groups)  # id 7 is BOS, not data
    with pytest.raises(ValueError, match="x0"):
        model(x[:, :5], groups[:, :5])
    with pytest.raises(TypeError, match="x0"):
        model(x.float(), groups)
    with pytest.raises(ValueError, match="groups"):
        model(x, groups[:, :3])
    with pytest.raises(ValueError, match="groups"):
        model(x, groups.long() * 2)
    with pytest.raises(ValueError, match="query_pos"):
        model.forward_packed(x[:, :2], torch.zeros(2, 2, dtype=torch.long), torch.full((2, 1), 12))
    with pytest.raises(ValueError, match="clean_pos"):
        model.forward_packed(
            x[:, :2], torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 1).long()
        )
    with pytest.raises(ValueError, match="pre_query"):
        PGMConfig(7, 12, pre_query="mean")
    with pytest.raises(ValueError, match="n_heads"):
        PGMConfig(7, 12, d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="seq_len"):
        PGMConfig(7, 0)


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"grid": (3, 5)}, ValueError, "H \\* W == seq_len=12"),
        ({"grid": (12,)}, ValueError, "grid"),
        ({"grid": [3, 4]}, ValueError, "grid"),
        ({"grid": (0, 12)}, ValueError, "grid"),
        ({"grid": (3, 4), "d_model": 24, "n_heads": 4}, ValueError, "divisible by 4"),
        ({"learned_positions": 1}, TypeError, "learned_positions"),
        ({"query_residual": None}, TypeError, "query_residual"),
    ],
)
def test_bad_grid_and_positions(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        PGMConfig(7, 12, **kwargs)


def test_grid_rope_is_relative_in_two_dimensions():
    """2-D RoPE: BOS at (0, 0), pixel (r, c) at (r + 1, c + 1); the angles add per axis."""
    from pgm import PartitionTransformer

    m = PartitionTransformer(PGMConfig(5, 12, 16, 2, 1, 1, grid=(3, 4)))
    a = m.angles  # (13, head_dim / 2): first half of the bands rows, second half columns
    half = a.shape[1] // 2
    assert torch.all(a[0] == 0)
    pixel = 1 + 2 * 4 + 3  # data position of (2, 3)
    torch.testing.assert_close(a[pixel, :half], 3 * a[1 + 4, :half] / 2)  # rows: r + 1 = 3 vs 2
    torch.testing.assert_close(a[pixel, half:], 4 * a[1, half:])  # cols: c + 1 = 4 vs 1


@pytest.mark.parametrize("grid", [False, True], ids=["1d", "grid"])
def test_bos_only_context_gives_the_same_prediction_at_every_position(grid):
    """With BOS as the only clean token every query attends to one key (weight 1), and GroupSwap
    has no residual (as in the authors' ``GroupSwapLayer``), so the first sampling step cannot
    depend on the position, even with learned positions: the per-pixel marginal of an image is
    out of reach of PGM at that step (MDLM, whose mask tokens carry positions, has it)."""
    m = make_model(grid=grid)
    empty = torch.zeros(1, 0, dtype=torch.long)
    with torch.no_grad():
        logits = m.forward_packed(empty, empty, torch.arange(12)[None])
    torch.testing.assert_close(logits[0], logits[0, :1].expand(12, -1), atol=1e-6, rtol=0)
    # the query residual carries the position past the one-key attention
    with torch.no_grad():
        res = make_model(grid=grid, residual=True).forward_packed(
            empty, empty, torch.arange(12)[None]
        )
    assert (res[0] - res[0, :1]).abs().amax() > 1e-3


def test_the_shared_layers_come_from_masked_diffusion():
    """PGM imports what it shares with the MDLM baseline instead of copying it (issue 68): the
    sizes and their checks, the pre-norm block's layers and MLP, and the loss's noise draw."""
    from masked_diffusion import LogLinearSchedule, PreNormBlock, TransformerSize, mdlm_loss
    from pgm.loss import pgm_loss
    from pgm.model import EncoderBlock, PartitionTransformer, PGMConfig

    assert issubclass(PGMConfig, TransformerSize) and issubclass(EncoderBlock, PreNormBlock)
    with pytest.raises(ValueError, match="vocab_size: expected a positive int"):
        PGMConfig(vocab_size=True, seq_len=4)
    torch.manual_seed(0)
    model = PartitionTransformer(PGMConfig(vocab_size=7, seq_len=10, d_model=16, n_heads=2))
    x0 = torch.randint(0, 7, (3, 10), generator=torch.Generator().manual_seed(1))
    ours = pgm_loss(model, x0, LogLinearSchedule(), 7, generator=torch.Generator().manual_seed(2))
    mdlm = mdlm_loss(
        lambda x, t: torch.zeros(*x.shape, 7), x0, LogLinearSchedule(), 7,
        generator=torch.Generator().manual_seed(2),
    )  # fmt: skip
    assert torch.equal(ours.t, mdlm.t) and torch.equal(ours.groups, mdlm.x_t == 7)
