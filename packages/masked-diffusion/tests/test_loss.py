import itertools
import math

import numpy as np
import pytest
import torch
from masked_diffusion import (
    CosineSchedule,
    LogLinearSchedule,
    mdlm_loss,
    nelbo,
    nelbo_terms,
    q_xt,
    sample_t,
    subs_log_probs,
)
from masked_diffusion.reference import nelbo_terms_loop

from shared_core.testing import assert_close

DTYPES = [(torch.float64, 1e-10), (torch.float32, 1e-5), (torch.bfloat16, 1e-2)]


def test_vectorised_terms_match_reference(table_denoiser):
    g = torch.Generator().manual_seed(1)
    x0 = torch.randint(0, 5, (16, 3), generator=g)
    for sched in (LogLinearSchedule(), CosineSchedule()):
        out = mdlm_loss(table_denoiser, x0, sched, 5, generator=g)
        ref = nelbo_terms_loop(out.logits, x0, out.x_t, out.t, sched)
        assert_close("terms", ref, out.terms, 1e-6)
        assert out.loss == pytest.approx(float(ref.mean()), rel=1e-5)
        assert (out.terms[out.x_t != 5] == 0).all()


@pytest.mark.parametrize("dtype,ratio", DTYPES, ids=["f64", "f32", "bf16"])
@pytest.mark.parametrize("sched", [LogLinearSchedule(), CosineSchedule()], ids=["loglin", "cos"])
def test_terms_in_each_dtype_match_the_float64_loop(device, dtype, ratio, sched):
    """`nelbo_terms` on `device` in float64/float32/bfloat16 vs the float64 loop on CPU."""
    g = torch.Generator().manual_seed(3)
    b, n, v = 32, 16, 11
    x0 = torch.randint(0, v, (b, n), generator=g)
    t = sample_t(b, generator=g).double()
    x_t = q_xt(x0, t, sched, v, generator=g)
    logits = 2.0 * torch.randn(b, n, v, generator=g, dtype=torch.float64)
    ref = nelbo_terms_loop(logits, x0, x_t, t, sched)
    fast = nelbo_terms(
        logits.to(device, dtype),
        x0.to(device),
        x_t.to(device),
        t.to(device, torch.promote_types(dtype, torch.float32)),
        sched,  # times stay >= float32
    )
    assert_close(f"nelbo terms {dtype}", ref, fast, ratio)


def _exact_integrand(denoiser, x0, t, sched):
    """E_{x_t | x0, t} of the summed per-token terms, by enumerating all mask patterns."""
    L, v = x0.shape[1], denoiser.vocab_size
    a = float(sched.alpha(torch.tensor([t], dtype=torch.float64)))
    total = 0.0
    for pattern in itertools.product([0, 1], repeat=L):
        m = torch.tensor(pattern, dtype=torch.bool)
        prob = np.prod([(1 - a) if p else a for p in pattern])
        x_t = torch.where(m[None], torch.full_like(x0, v), x0)
        tt = torch.tensor([t])
        terms = nelbo_terms(denoiser(x_t, tt), x0, x_t, tt, sched)
        total += prob * float(terms.sum())
    return total


@pytest.mark.parametrize("sched", [LogLinearSchedule(), CosineSchedule()])
def test_monte_carlo_matches_integral_over_t(table_denoiser, sched):
    x0 = torch.tensor([[1, 4, 2]])
    se = 1e-3
    # Gauss-Legendre quadrature of E_{x_t}[terms](t) over [se, 1], divided by (1 - se)
    nodes, weights = np.polynomial.legendre.leggauss(40)
    ts = 0.5 * (nodes + 1) * (1 - se) + se
    integral = sum(
        w * 0.5 * (1 - se) * _exact_integrand(table_denoiser, x0, float(t), sched)
        for t, w in zip(ts, weights, strict=True)
    ) / (1 - se)
    g = torch.Generator().manual_seed(0)
    n = 200_000
    out = mdlm_loss(table_denoiser, x0.expand(n, 3), sched, 5, generator=g, sampling_eps=se)
    per_seq = out.terms.sum(dim=1).double()
    mc, stderr = float(per_seq.mean()), float(per_seq.std() / math.sqrt(n))
    assert abs(mc - integral) < 4 * stderr + 1e-6, (mc, integral, stderr)


def test_single_token_bound_is_tight():
    """One token, model = data distribution p, eps = 0: the NELBO equals -log p(x) exactly."""
    logits = torch.tensor([0.3, -1.2, 2.0, 0.5])
    sched = LogLinearSchedule(eps=0.0)
    x0 = torch.tensor([[2]])
    x_t = torch.tensor([[4]])
    nodes, weights = np.polynomial.legendre.leggauss(20)
    val = 0.0
    for t, w in zip(0.5 * (nodes + 1), weights, strict=True):
        tt = torch.tensor([t], dtype=torch.float64)
        term = float(nelbo_terms(logits[None, None].double(), x0, x_t, tt, sched)[0, 0])
        val += 0.5 * w * float(sched.mask_prob(tt)) * term  # only the masked branch contributes
    assert val == pytest.approx(-float(torch.log_softmax(logits, -1)[2]), abs=1e-3)
    for p_name, sch in (("cosine", CosineSchedule(eps=0.0)),):
        v2 = 0.0
        for t, w in zip(0.5 * (nodes + 1), weights, strict=True):
            tt = torch.tensor([t], dtype=torch.float64)
            term = float(nelbo_terms(logits[None, None].double(), x0, x_t, tt, sch)[0, 0])
            v2 += 0.5 * w * float(sch.mask_prob(tt)) * term
        assert v2 == pytest.approx(-float(torch.log_softmax(logits, -1)[2]), abs=1e-3), p_name


def test_subs_carry_over():
    logits = torch.randn(2, 4, 3)
    x_t = torch.tensor([[0, 3, 2, 3], [3, 3, 1, 0]])
    lp = subs_log_probs(logits, x_t, 3)
    assert torch.allclose(lp.exp().sum(-1), torch.ones(2, 4))
    keep = x_t != 3
    assert (lp.argmax(-1)[keep] == x_t[keep]).all()
    assert (lp.exp().max(-1).values[keep] == 1).all()


def test_antithetic_times_are_stratified():
    t = sample_t(10, generator=torch.Generator().manual_seed(0), sampling_eps=0.0)
    assert sorted(int(x * 10) for x in t) == list(range(10))
    assert t.shape == (10,) and t.dtype == torch.float32


def test_forward_mask_rate():
    g = torch.Generator().manual_seed(0)
    x0 = torch.zeros(4000, 50, dtype=torch.long)
    t = torch.full((4000,), 0.3)
    x_t = q_xt(x0, t, LogLinearSchedule(), 7, generator=g)
    assert float((x_t == 7).float().mean()) == pytest.approx(0.3 * 0.999, abs=3e-3)
    assert set(x_t.unique().tolist()) <= {0, 7}


def test_bad_input(table_denoiser):
    s = LogLinearSchedule()
    with pytest.raises(ValueError, match="x0"):
        mdlm_loss(table_denoiser, torch.tensor([[0, 5, 1]]), s, 5)
    with pytest.raises(ValueError, match="x0"):
        mdlm_loss(table_denoiser, torch.tensor([-1, 2, 1]), s, 5)
    with pytest.raises(TypeError, match="x0"):
        mdlm_loss(table_denoiser, torch.tensor([[0.0, 1.0, 1.0]]), s, 5)
    with pytest.raises(ValueError, match="logits"):
        mdlm_loss(lambda x, t: torch.full((*x.shape, 5), math.nan), torch.zeros(2, 3).long(), s, 5)
    with pytest.raises(ValueError, match="logits"):
        mdlm_loss(lambda x, t: torch.zeros(*x.shape, 6), torch.zeros(2, 3).long(), s, 5)
    with pytest.raises(ValueError, match="batch_size"):
        sample_t(0)


@pytest.mark.parametrize(
    "t, match",
    [
        (torch.tensor([2.0, 0.5]), r"t: .*\(0, 1\].*2.0"),
        (torch.tensor([0.0, 0.5]), r"t: .*\(0, 1\]"),
        (torch.tensor([-0.1, 0.5]), r"t: .*\(0, 1\]"),
        (torch.tensor([float("nan"), 0.5]), r"t: .*nan"),
        (torch.tensor([0.5, 0.5, 0.5]), r"t: expected shape \(2,\)"),
    ],
)
def test_bad_times_are_rejected(table_denoiser, t, match):
    with pytest.raises(ValueError, match=match):
        mdlm_loss(table_denoiser, torch.zeros(2, 3).long(), LogLinearSchedule(), 5, t=t)


def test_forward_process_rejects_bad_times():
    with pytest.raises(ValueError, match=r"t: .*\(0, 1\]"):
        q_xt(torch.zeros(2, 3).long(), torch.tensor([2.0, 0.5]), LogLinearSchedule(), 5)


def test_bad_loss_arguments(table_denoiser):
    x0 = torch.zeros(2, 3).long()
    with pytest.raises(TypeError, match="t: expected a floating"):
        mdlm_loss(table_denoiser, x0, LogLinearSchedule(), 5, t=torch.tensor([1, 1]))
    with pytest.raises(TypeError, match="schedule"):
        mdlm_loss(table_denoiser, x0, "loglinear", 5)
    with pytest.raises(ValueError, match="vocab_size"):
        mdlm_loss(table_denoiser, x0, LogLinearSchedule(), 0)
    with pytest.raises(ValueError, match="sampling_eps"):
        mdlm_loss(table_denoiser, x0, LogLinearSchedule(), 5, sampling_eps=1.5)
    with pytest.raises(ValueError, match="x0: expected a non-empty"):
        mdlm_loss(table_denoiser, torch.zeros(0, 3).long(), LogLinearSchedule(), 5)
    with pytest.raises(ValueError, match="n_samples"):
        nelbo(table_denoiser, x0, LogLinearSchedule(), 5, n_samples=0)
    with pytest.raises(ValueError, match="batch_size"):
        nelbo(table_denoiser, x0, LogLinearSchedule(), 5, batch_size=0)


class ExactDenoiser:
    """The true SUBS denoiser of a joint table p over V^2: p(x^l | the unmasked token)."""

    def __init__(self, p: torch.Tensor) -> None:
        self.p, self.v = p.double(), p.shape[0]

    def __call__(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        v, p = self.v, self.p
        out = torch.empty(*x.shape, v, dtype=torch.float64)
        for i in range(x.shape[0]):
            a, b = int(x[i, 0]), int(x[i, 1])
            out[i, 0] = (p[:, b] / p[:, b].sum()).log() if b < v else p.sum(1).log()
            out[i, 1] = (p[a] / p[a].sum()).log() if a < v else p.sum(0).log()
        return out


def _exact_nelbo(p: torch.Tensor, x: tuple[int, int], sched, lo: float) -> float:
    """The estimator's expectation for x, by enumerating the 4 mask patterns and quadrature in t."""
    den, v = ExactDenoiser(p), p.shape[0]
    x0 = torch.tensor([x])
    nodes, weights = np.polynomial.legendre.leggauss(200)
    total = 0.0
    for tn, w in zip(0.5 * (nodes + 1) * (1 - lo) + lo, weights, strict=True):
        tt = torch.tensor([tn], dtype=torch.float64)
        m = float(sched.mask_prob(tt))
        for pattern in itertools.product([0, 1], repeat=2):
            prob = np.prod([m if q else 1 - m for q in pattern])
            x_t = torch.where(torch.tensor(pattern, dtype=torch.bool)[None], v, x0)
            total += (
                0.5
                * (1 - lo)
                * w
                * prob
                * float(nelbo_terms(den(x_t, tt), x0, x_t, tt, sched).sum())
            )
    return total / (1 - lo)  # the estimator draws t uniformly on [lo, 1]


def test_nelbo_is_an_upper_bound_only_with_alpha1_zero_and_t_from_zero():
    """Exact enumeration on a tiny joint: eps = 0 gives exactly -log p(x) (tight bound for the
    exact denoiser); MDLM's defaults (eps = 1e-3, t on [1e-3, 1]) fall BELOW -log p(x)."""
    p = torch.tensor(
        [[0.30, 0.05, 0.05], [0.02, 0.20, 0.08], [0.10, 0.05, 0.15]], dtype=torch.float64
    )
    for x in [(0, 0), (1, 2), (2, 1)]:
        nll = -math.log(float(p[x]))
        exact0 = _exact_nelbo(p, x, LogLinearSchedule(eps=0.0), 0.0)
        default = _exact_nelbo(p, x, LogLinearSchedule(), 1e-3)
        assert exact0 == pytest.approx(nll, abs=1e-4), x  # the upper bound, tight here
        assert default < nll, (x, default, nll)  # not an upper bound with the defaults
        assert nll - default < 3e-3


def test_nelbo_estimate_carries_a_standard_error_that_covers_the_truth():
    p = torch.tensor([[0.30, 0.05, 0.05], [0.02, 0.20, 0.08], [0.10, 0.05, 0.15]])
    x0 = torch.tensor([[1, 2]]).repeat(4000, 1)
    est = nelbo(ExactDenoiser(p), x0, LogLinearSchedule(eps=0.0), 3, n_samples=1, batch_size=4000,
                sampling_eps=0.0)  # fmt: skip
    truth = -math.log(float(p[1, 2])) / 2  # nats per token
    assert est.n == 4000 and 0 < est.stderr < 0.05
    assert abs(float(est) - truth) < 4 * est.stderr
    again = nelbo(ExactDenoiser(p), x0[:8], LogLinearSchedule(), 3, n_samples=2, seed=1)
    assert again == nelbo(ExactDenoiser(p), x0[:8], LogLinearSchedule(), 3, n_samples=2, seed=1)


def test_per_token_mask_prob_and_weight():
    """Element-wise hooks: equal per-token values reproduce the shared schedule bit for bit;
    per-token values give each column its own mask rate and weight; bad shapes are named."""
    s = LogLinearSchedule()
    x0 = torch.randint(0, 4, (3000, 6), generator=torch.Generator().manual_seed(1))
    t = torch.full((3000,), 0.4)
    shared = q_xt(x0, t, s, 4, generator=torch.Generator().manual_seed(2))
    same = s.mask_prob(t)[:, None].expand(x0.shape).contiguous()
    hooked = q_xt(x0, t, s, 4, generator=torch.Generator().manual_seed(2), mask_prob=same)
    assert torch.equal(shared, hooked)
    p = torch.tensor([0.0, 0.1, 0.3, 0.5, 0.9, 1.0]).expand(x0.shape)
    x_t = q_xt(x0, t, s, 4, generator=torch.Generator().manual_seed(3), mask_prob=p)
    assert torch.allclose((x_t == 4).double().mean(0), p[0].double(), atol=0.03)
    logits = torch.randn(3000, 6, 4, generator=torch.Generator().manual_seed(4))
    base = nelbo_terms(logits, x0, x_t, t, s)
    w = torch.linspace(0.5, 3.0, 6).expand(x0.shape)
    terms = nelbo_terms(logits, x0, x_t, t, s, weight=w)
    nll = base / s.weight(t)[:, None]
    assert_close("per-token weighted terms", nll * w, terms, 1e-6)
    shared_w = s.weight(t)[:, None].expand(x0.shape)
    assert torch.equal(nelbo_terms(logits, x0, x_t, t, s, weight=shared_w), base)
    with pytest.raises(ValueError, match="mask_prob: expected shape"):
        q_xt(x0, t, s, 4, mask_prob=torch.zeros(3000, 5))
    with pytest.raises(ValueError, match="weight: expected shape"):
        nelbo_terms(logits, x0, x_t, t, s, weight=torch.ones(3000))
