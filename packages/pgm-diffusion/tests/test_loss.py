import pytest
import torch
from masked_diffusion import LogLinearSchedule, nelbo, nelbo_terms, q_xt, sample_t
from pgm import PartitionTransformer, PGMConfig, as_denoiser, partition_terms, pgm_loss, pgm_nelbo
from pgm.reference import partition_terms_loop

from shared_core.testing import assert_close


def test_loss_terms_equal_loop_reference(model):
    s = LogLinearSchedule()
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 7, (6, 12), generator=g)
    out = pgm_loss(model, x, s, 7, generator=g)
    ref = partition_terms_loop(out.logits.detach(), x, out.groups, out.t, s)
    assert_close("pgm terms", ref, out.terms.detach(), 1e-5)
    assert float(out.loss.detach()) == pytest.approx(float(ref.mean()), rel=1e-5)
    # the partition is group 1 with probability 1 - alpha_t (here ~t): supervised everywhere
    assert torch.all(out.terms > 0)


@pytest.mark.parametrize(
    "dtype,ratio", [(torch.float64, 1e-10), (torch.float32, 1e-5), (torch.bfloat16, 1e-2)],
    ids=["f64", "f32", "bf16"],
)  # fmt: skip
def test_partition_terms_in_each_dtype_match_float64_loop(device, dtype, ratio):
    s = LogLinearSchedule()
    g = torch.Generator().manual_seed(4)
    b, n, v = 16, 12, 7
    x = torch.randint(0, v, (b, n), generator=g)
    t = sample_t(b, generator=g).double()
    groups = q_xt(x, t, s, v, generator=g) == v
    logits = 2.0 * torch.randn(b, n, v, generator=g, dtype=torch.float64)
    ref = partition_terms_loop(logits, x, groups, t, s)
    fast = partition_terms(
        logits.to(device, dtype),
        x.to(device),
        groups.to(device),
        t.to(device, torch.promote_types(dtype, torch.float32)),
        s,  # times stay >= float32
    )
    assert_close(f"partition terms {dtype}", ref, fast, ratio)


def test_weights_are_one_over_t_and_one_over_one_minus_t(model):
    s = LogLinearSchedule()
    x = torch.randint(0, 7, (2, 12))
    groups = torch.tensor([[True] * 12, [False] * 12])
    t = torch.tensor([0.25, 0.25])
    logits = model(x, groups)
    ce = -torch.log_softmax(logits, -1).gather(-1, x[..., None]).squeeze(-1)
    terms = partition_terms(logits, x, groups, t, s)
    torch.testing.assert_close(terms[0], ce[0] / 0.25 / 2)
    torch.testing.assert_close(terms[1], ce[1] / 0.75 / 2)


def test_partition_rate_follows_alpha():
    m = PartitionTransformer(PGMConfig(5, 64, 16, 2, 1, 1))
    x = torch.zeros(400, 64, dtype=torch.long)
    t = torch.full((400,), 0.3)
    out = pgm_loss(m, x, LogLinearSchedule(), 5, t=t, generator=torch.Generator().manual_seed(0))
    assert float(out.groups.float().mean()) == pytest.approx(0.3 * (1 - 1e-3), abs=0.01)


def test_eval_nelbo_counts_group_one_only_like_mdlm(model):
    """pgm_nelbo is MDLM's estimator: w(t) 1[g=1] CE, normalised by all tokens."""
    s = LogLinearSchedule()
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 7, (5, 12), generator=g)
    groups = torch.rand(5, 12, generator=g) < 0.4
    t = torch.rand(5, generator=g) * 0.9 + 0.05
    x_t = x.masked_fill(groups, 7)
    den = as_denoiser(model, 7)
    logits = den(x_t, t)
    ce = -torch.log_softmax(model(x, groups), -1).gather(-1, x[..., None]).squeeze(-1)
    want = torch.where(groups, ce / t[:, None], torch.zeros_like(ce))
    torch.testing.assert_close(nelbo_terms(logits, x, x_t, t, s), want, atol=1e-5, rtol=1e-5)
    assert pgm_nelbo(model, x, s, 7, n_samples=2) == nelbo(den, x, s, 7, n_samples=2)


def test_one_token_eval_nelbo_is_unbiased_for_the_marginal():
    """L = 1: the only context is BOS, so p is a fixed marginal and E[NELBO] = -E log p(x)."""
    torch.manual_seed(0)
    m = PartitionTransformer(PGMConfig(3, 1, 16, 2, 1, 1))
    with torch.no_grad():
        m.head.bias.copy_(torch.tensor([0.5, -1.0, 0.2]))
    x = torch.tensor([[0], [1], [2], [0]])
    logp = torch.log_softmax(m.head.bias.detach(), -1)
    exact = float(-logp[x.flatten()].mean())
    est = pgm_nelbo(m, x.repeat(500, 1), LogLinearSchedule(), 3, n_samples=8, batch_size=2000)
    assert est == pytest.approx(exact, rel=0.05)


@pytest.mark.parametrize(
    "t, match",
    [(torch.tensor([2.0, 0.5]), r"\(0, 1\]"), (torch.tensor([1.0, 0.5]), r"\(0, 1\)"),
     (torch.tensor([float("nan"), 0.5]), "nan"), (torch.tensor([0.5]), "shape")],
)  # fmt: skip
def test_bad_times(model, t, match):
    with pytest.raises(ValueError, match="t: .*" + match):
        pgm_loss(model, torch.zeros(2, 12).long(), LogLinearSchedule(), 7, t=t)


def test_bad_schedule(model):
    with pytest.raises(TypeError, match="schedule"):
        pgm_loss(model, torch.zeros(2, 12).long(), "loglinear", 7)


def test_bad_input(model):
    with pytest.raises(ValueError, match="x0"):
        pgm_loss(model, torch.full((2, 12), 9), LogLinearSchedule(), 7)
