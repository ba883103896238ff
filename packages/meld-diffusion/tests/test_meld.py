import numpy as np
import pytest
import torch
from masked_diffusion import LogLinearSchedule, nelbo_terms, q_xt, row_batches, sample_t
from meld_diffusion.data import MASK_ID, valid_positions
from meld_diffusion.meld import (
    GraphMDM,
    class_loss,
    class_sample,
    graph_loss_fn,
    meld_loss,
    meld_sample,
    vanilla_loss,
    vanilla_sample,
    with_counts,
)
from meld_diffusion.model import GraphTransformer, GraphTransformerConfig
from meld_diffusion.rates import ClassRates, ElementRates, MELDConfig
from meld_diffusion.reference import meld_terms_loop, reverse_step_law
from meld_diffusion.schedule import ElementwiseSchedule

from shared_core.testing import assert_close
from shared_core.train import TrainConfig, fit

N = 6
EPS = 1e-4
SCHEDULE = ElementwiseSchedule(LogLinearSchedule(eps=EPS))


def _batch(qm9_rows, k: int = 24):
    rows, counts, _ = qm9_rows
    return rows[-k:], counts[-k:]


def test_unit_rates_and_silent_embeddings_give_vanilla_mdm(denoiser, qm9_rows):
    """f_phi = 0 (every w = 1), no permutation draw and zero embedding maps: MELD's loss is
    masked_diffusion's (same masks, logits and terms)."""
    x, n = _batch(qm9_rows)
    net = GraphTransformer(
        GraphTransformerConfig(max_atoms=N, d_node=16, d_edge=8, n_layers=2, d_pos=3)
    )
    net.load_state_dict(denoiser.state_dict(), strict=False)
    torch.nn.init.zeros_(net.pos_node.weight)
    torch.nn.init.zeros_(net.pos_edge.weight)
    rates = ElementRates(MELDConfig(n_columns=N, dim=3, permute=False))
    t = sample_t(len(x), generator=torch.Generator().manual_seed(4))
    a = vanilla_loss(
        GraphMDM(denoiser), x, n, SCHEDULE.base, max_atoms=N, t=t,
        generator=torch.Generator().manual_seed(5),
    )  # fmt: skip
    b = meld_loss(
        GraphMDM(net, rates), x, n, SCHEDULE, max_atoms=N, t=t,
        generator=torch.Generator().manual_seed(5),
    )  # fmt: skip
    assert torch.equal(b.w, torch.ones_like(b.w))
    assert torch.equal(a.x_t, b.x_t)
    assert torch.equal(a.logits, b.logits.detach())
    assert_close("terms", a.terms, b.terms.detach(), 1e-12)


def test_masks_and_terms_are_masked_diffusions_per_element_ones(meld_model, qm9_rows):
    """The hard mask is q_xt(mask_prob=...)'s draw and the terms nelbo_terms(weight=...)."""
    x, n = _batch(qm9_rows)
    g = torch.Generator().manual_seed(7)
    out = meld_loss(meld_model, x, n, SCHEDULE, max_atoms=N, generator=g)
    g2 = torch.Generator().manual_seed(7)
    sample_t(len(x), generator=g2)
    meld_model.rates.columns(len(x), N, g2)
    valid = valid_positions(n, N)
    p = SCHEDULE.mask_prob(out.t, out.w.detach()) * valid
    assert torch.equal(out.x_t, q_xt(x, out.t, SCHEDULE.base, MASK_ID, g2, mask_prob=p))
    weight = SCHEDULE.weight(out.t, out.w.detach())
    ref = nelbo_terms(out.logits.detach(), x, out.x_t, out.t, SCHEDULE.base, weight=weight)
    assert_close("terms", ref * valid, out.terms.detach(), 1e-6)


def test_terms_match_the_loop_reference(meld_model, qm9_rows):
    x, n = _batch(qm9_rows, 6)
    model = meld_model.double()
    out = meld_loss(model, x, n, SCHEDULE, max_atoms=N, generator=torch.Generator().manual_seed(2))
    assert bool((out.x_t == 4).any()) and bool((out.w - 1).abs().max() > 0.1)
    ref = meld_terms_loop(
        out.logits.detach(), x, out.x_t, out.t, out.w.detach(), n, N, SCHEDULE.base
    )
    assert_close("terms", ref, out.terms.detach(), 1e-10)


def test_rates_ignore_the_graph_and_follow_the_columns(meld_model, qm9_rows):
    """Acceptance: two different graphs with the same atom count and the same pi get the same
    per-position rates; permuting H's columns permutes them."""
    rows, counts, _ = qm9_rows
    x = rows[counts == N][:2]
    assert not torch.equal(x[0], x[1])
    n = torch.full((2,), N)
    cols = torch.tensor([[5, 0, 7, 2, 1, 3]]).expand(2, -1)
    t = torch.full((2,), 0.5)
    out = meld_loss(meld_model, x, n, SCHEDULE, max_atoms=N, t=t, columns=cols)
    assert torch.equal(out.w[0], out.w[1])
    assert float(out.w.detach().std()) > 0.05  # the rates do differ between positions
    rates = meld_model.rates
    sigma = torch.randperm(8, generator=torch.Generator().manual_seed(0))
    moved = ElementRates(rates.cfg)
    moved.load_state_dict(rates.state_dict())
    with torch.no_grad():
        moved.H.copy_(rates.H[:, sigma])  # column c of the new H is column sigma[c] of the old
    assert_close("node rates", rates(sigma[cols])[:, :N], moved(cols)[:, :N], 1e-6)
    assert_close("all rates", rates(sigma[cols]), moved(cols), 1e-6)
    atom_perm = torch.tensor([2, 0, 1, 5, 3, 4])
    w_perm = rates(cols[:, atom_perm])
    assert_close("relabelled atoms", rates(cols)[:, :N][:, atom_perm], w_perm[:, :N], 1e-6)


def test_random_columns_are_distinct_and_uniform():
    rates = ElementRates(MELDConfig(n_columns=4, dim=2))
    cols = rates.columns(20000, 3, torch.Generator().manual_seed(0))
    assert cols.shape == (20000, 3)
    assert all(len(set(r)) == 3 for r in cols[:200].tolist())
    freq = torch.bincount(cols[:, 0], minlength=4).double() / 20000
    assert torch.allclose(freq, torch.full((4,), 0.25, dtype=torch.float64), atol=0.02)
    fixed = ElementRates(MELDConfig(n_columns=4, dim=2, permute=False)).columns(2, 3)
    assert fixed.tolist() == [[0, 1, 2], [0, 1, 2]]


def test_gradients_reach_h_and_f_phi_through_the_masks(meld_model, qm9_rows):
    x, n = _batch(qm9_rows)
    out = meld_loss(
        meld_model, x, n, SCHEDULE, max_atoms=N, generator=torch.Generator().manual_seed(0)
    )
    out.loss.backward()
    rates = meld_model.rates
    assert float(rates.H.grad.abs().sum()) > 0 and float(rates.f_phi.weight.grad.abs().sum()) > 0
    # tau scales the straight-through (mask) path alone: the loss is unchanged, the gradient not
    grads, losses = [], []
    for tau in (1.0, 1e6):
        meld_model.zero_grad()
        out = meld_loss(
            meld_model, x, n, SCHEDULE, max_atoms=N, tau=tau,
            generator=torch.Generator().manual_seed(0),
        )  # fmt: skip
        out.loss.backward()
        losses.append(out.loss.detach())
        grads.append(rates.f_phi.weight.grad.clone())
    assert torch.equal(losses[0], losses[1])
    assert float((grads[0] - grads[1]).abs().max()) > 1e-6 * float(grads[0].abs().max())


class _Recorder(torch.nn.Module):
    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net, self.inputs, self.logits = net, [], []

    def forward(self, x, n_atoms, t, pos=None):
        out = self.net(x, n_atoms, t, pos)
        self.inputs.append(x.clone())
        self.logits.append(out.detach().double())
        return out


@pytest.mark.parametrize("arm", ["meld", "class"])
def test_one_reverse_step_follows_the_enumerated_law(arm):
    """Acceptance: for a fixed H (and fixed pi) the law of one reverse step of the sampler
    matches the enumeration of sum_{g0} p_theta(g0 | g_t) q(g_s | g_t, g0) on a 2-atom graph."""
    torch.manual_seed(0)
    d_pos = 3 if arm == "meld" else 0
    net = GraphTransformer(
        GraphTransformerConfig(max_atoms=2, d_node=8, d_edge=8, n_layers=1, n_heads=2, d_pos=d_pos)
    )
    for p in net.parameters():
        torch.nn.init.normal_(p, std=0.5)
    rec = _Recorder(net)
    batch = 30000
    n = torch.full((batch,), 2)
    g = torch.Generator().manual_seed(1)
    if arm == "meld":
        rates = ElementRates(MELDConfig(n_columns=4, dim=3, eps=EPS))
        torch.nn.init.normal_(rates.H, std=1.0)
        torch.nn.init.normal_(rates.f_phi.weight, std=1.5)
        cols = torch.tensor([[3, 1]]).expand(batch, -1)
        meld_sample(
            GraphMDM(rec, rates),
            n,
            max_atoms=2,
            steps=2,
            schedule=SCHEDULE,
            generator=g,
            columns=cols,
        )
        w = rates(cols[:1]).detach().double()[0]  # (L,)
        table = w[:, None].expand(-1, 4)
    else:
        rates = ClassRates()
        torch.nn.init.normal_(rates.a, std=1.0)
        class_sample(GraphMDM(rec, rates), n, max_atoms=2, steps=2, schedule=SCHEDULE, generator=g)
        table = rates(2).detach().double()  # (L, 4)
    assert float(table.std()) > 0.1
    keep = lambda t: 1.0 - (1.0 - EPS) * t**table  # noqa: E731
    probs = torch.softmax(rec.logits[0][0], -1).numpy()
    law = reverse_step_law(probs, rec.inputs[0][0].numpy(), keep(1.0).numpy(), keep(0.5).numpy())
    assert abs(sum(law.values()) - 1.0) < 1e-12
    after = rec.inputs[1]
    states, counts = torch.unique(after, dim=0, return_counts=True)
    seen = {tuple(s.tolist()): int(c) / batch for s, c in zip(states, counts, strict=True)}
    assert set(seen) <= set(law)
    for z, p in law.items():
        q = seen.get(z, 0.0)
        assert abs(q - p) <= 5 * np.sqrt(p * (1 - p) / batch) + 2e-4, (z, q, p)


def test_samples_are_complete_keep_padding_and_are_seeded(
    meld_model, class_model, denoiser, qm9_rows
):
    _, n = _batch(qm9_rows, 40)
    valid = valid_positions(n, N)
    for sampler, model in ((meld_sample, meld_model), (class_sample, class_model)):
        x, y = (
            sampler(
                model,
                n,
                max_atoms=N,
                steps=7,
                schedule=SCHEDULE,
                generator=torch.Generator().manual_seed(1),
            )
            for _ in range(2)
        )
        assert int(x.max()) < 4 and int(x.min()) >= 0
        assert torch.all(x[~valid] == 0)
        assert torch.equal(x, y)
    v = vanilla_sample(GraphMDM(denoiser), n, max_atoms=N, steps=5, schedule=SCHEDULE.base)
    assert torch.all(v[~valid] == 0) and int(v.max()) < 4


def test_class_level_loss(class_model, qm9_rows):
    """Equal class rates reduce GenMD4's NELBO to the element-wise one; its terms are >= 0."""
    x, n = _batch(qm9_rows)
    out = class_loss(
        class_model, x, n, SCHEDULE, max_atoms=N, generator=torch.Generator().manual_seed(3)
    )
    assert bool((out.terms.detach() >= -1e-6).all()) and float(out.loss.detach()) > 0
    out.loss.backward()
    assert float(class_model.rates.a.grad.abs().sum()) > 0
    with torch.no_grad():
        class_model.rates.a.fill_(0.3)
    out = class_loss(
        class_model, x, n, SCHEDULE, max_atoms=N, generator=torch.Generator().manual_seed(3)
    )
    nll = -torch.log_softmax(out.logits.detach().float(), -1).gather(-1, x[..., None]).squeeze(-1)
    expect = (out.x_t == MASK_ID) * SCHEDULE.weight(out.t, out.w.detach()) * nll
    assert_close("equal rates", expect, out.terms.detach(), 1e-5)


class _CleanShift(torch.nn.Module):
    """A `GraphMDM` whose logits at still-clean positions are moved by `shift` (masked ones
    untouched): only the clean elements' cross-entropy changes."""

    def __init__(self, inner: GraphMDM, shift: float) -> None:
        super().__init__()
        self.inner, self.rates, self.shift = inner, inner.rates, shift

    def forward(self, x, t, n_atoms, *rest):
        logits = self.inner(x, t, n_atoms, *rest)
        clean = (x[..., MASK_ID].detach() < 0.5).to(logits.dtype)
        bump = torch.linspace(-1.0, 1.0, logits.shape[-1], dtype=logits.dtype)
        return logits + self.shift * clean[..., None] * bump


def test_class_loss_gradients_and_the_clean_cross_entropy(class_model, qm9_rows):
    """class_loss's `gradient`: all three give the same loss value; with "st" (default) and
    "score" the clean elements' (never trained) term cannot reach the class rates, with
    "st-clean-ce" (0.3.x's class_loss) it does."""
    x, n = _batch(qm9_rows)
    t = sample_t(len(x), generator=torch.Generator().manual_seed(4))
    u = torch.rand(x.shape, generator=torch.Generator().manual_seed(5))
    values = {}
    for gradient, same in (("st", True), ("score", True), ("st-clean-ce", False)):
        grads = []
        for shift in (0.0, 3.0):
            model = _CleanShift(class_model, shift)
            out = class_loss(model, x, n, SCHEDULE, max_atoms=N, t=t, u=u, gradient=gradient)
            grads.append(torch.autograd.grad(out.loss, class_model.rates.a)[0])
            values.setdefault(shift, []).append(out.loss.detach())
        assert float(grads[0].abs().sum()) > 0, gradient
        assert torch.equal(grads[0], grads[1]) == same, (gradient, grads)
    for shift, vals in values.items():
        for v in vals[1:]:
            assert_close(f"loss value (shift {shift})", v, vals[0], 1e-6)
    default = class_loss(class_model, x, n, SCHEDULE, max_atoms=N, t=t, u=u)
    assert torch.equal(default.loss.detach(), values[0.0][0])  # the default is "st"


@pytest.mark.parametrize("arm", ["vanilla", "meld", "class"])
def test_training_through_fit_is_seeded(denoiser, qm9_rows, arm):
    rows, counts, _ = qm9_rows
    data = with_counts(rows, counts)
    histories = []
    for _ in range(2):
        torch.manual_seed(0)
        d_pos = 4 if arm == "meld" else 0
        net = GraphTransformer(
            GraphTransformerConfig(max_atoms=N, d_node=16, d_edge=8, n_layers=1, d_pos=d_pos)
        )
        rates = {"vanilla": None, "meld": ElementRates(MELDConfig(dim=4)), "class": ClassRates()}[
            arm
        ]
        res = fit(
            GraphMDM(net, rates), graph_loss_fn(SCHEDULE, N), row_batches(data, 8, 0),
            TrainConfig(steps=3, lr=1e-3), device="cpu", show_progress=False,
        )  # fmt: skip
        histories.append(res.losses)
    assert histories[0] == histories[1] and all(np.isfinite(histories[0]))


def test_argument_errors(meld_model, denoiser, qm9_rows):
    x, n = _batch(qm9_rows, 4)
    with pytest.raises(ValueError, match="tau"):
        meld_loss(meld_model, x, n, SCHEDULE, max_atoms=N, tau=0.0)
    with pytest.raises(TypeError, match="schedule: expected an ElementwiseSchedule"):
        meld_loss(meld_model, x, n, LogLinearSchedule(), max_atoms=N)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="model: expected a GraphMDM with ElementRates"):
        meld_loss(GraphMDM(denoiser), x, n, SCHEDULE, max_atoms=N)
    with pytest.raises(ValueError, match="u: expected shape"):
        meld_loss(meld_model, x, n, SCHEDULE, max_atoms=N, u=torch.rand(2, 2))
    with pytest.raises(ValueError, match=r"n_atoms: expected integers in \[1, 6\]"):
        vanilla_loss(GraphMDM(denoiser), x, n * 0, LogLinearSchedule(), max_atoms=N)
    with pytest.raises(ValueError, match=r"x0: expected a \(batch, 21\)"):
        vanilla_loss(GraphMDM(denoiser), x[:, :5], n, LogLinearSchedule(), max_atoms=N)
    with pytest.raises(ValueError, match="steps"):
        meld_sample(meld_model, n, max_atoms=N, steps=0, schedule=SCHEDULE)
    with pytest.raises(ValueError, match="temperature"):
        vanilla_sample(
            GraphMDM(denoiser),
            n,
            max_atoms=N,
            steps=2,
            schedule=LogLinearSchedule(),
            temperature=0.0,
        )
    with pytest.raises(ValueError, match="n_atoms: expected counts"):
        vanilla_sample(
            GraphMDM(denoiser), n + 10, max_atoms=N, steps=2, schedule=LogLinearSchedule()
        )


def test_graph_larger_than_h_is_rejected(denoiser, qm9_rows):
    """Acceptance: a graph with more atoms than H has columns names N and the maximum."""
    x, n = _batch(qm9_rows, 4)
    small = GraphMDM(denoiser, ElementRates(MELDConfig(n_columns=4, dim=3)))
    with pytest.raises(ValueError, match=r"N = 6 atoms .* H has 4 \(the maximum N is 4\)"):
        meld_loss(small, x, n, SCHEDULE, max_atoms=N)
    with pytest.raises(ValueError, match=r"N = 6 atoms .*the maximum N is 4"):
        meld_sample(small, n, max_atoms=N, steps=2, schedule=SCHEDULE)
    with pytest.raises(ValueError, match=r"N = 5 atoms .*the maximum N is 4"):
        small.rates.columns(2, 5)


def test_normalised_rates_remove_the_common_time_warp():
    """Our option: normalised rates are the raw rates divided by one factor, and their geometric
    mean over all columns and column pairs is 1."""
    torch.manual_seed(0)
    r = ElementRates(MELDConfig(n_columns=5, dim=3, normalise=True))
    torch.nn.init.normal_(r.f_phi.weight, std=1.0)
    cols = torch.arange(5)[None]
    w = r(cols)
    assert float(w.detach().std()) > 0.05
    assert abs(float(torch.log(w).mean())) < 1e-5  # all columns = all elements here
    raw = ElementRates(MELDConfig(n_columns=5, dim=3))
    raw.load_state_dict(r.state_dict())
    assert_close("proportional", raw(cols) / raw(cols)[:, :1], w / w[:, :1], 1e-6)


def _own_term_estimates(gradient: str, tau: float, draws: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean d/d theta of ``sum_i 1[masked_i] w_i c_i`` over `draws` mask draws, and the exact one.

    Three elements with mask probabilities ``p = sigmoid(theta)``, weights w and masked-state
    cross-entropies c fixed (they do not depend on the mask: the own term of the NELBO); the
    clean-state cross-entropies (untrained in MELD) are large.
    """
    from meld_diffusion.meld import element_terms, straight_through_mask

    theta = torch.tensor([-3.0, -1.0, 0.5], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([2.0, 1.0, 0.5], dtype=torch.float64)
    c_masked = torch.tensor([0.7, 1.3, 0.4], dtype=torch.float64)
    c_clean = torch.full((3,), 5.0, dtype=torch.float64)
    p = torch.sigmoid(theta)[None].expand(draws, 3)
    u = torch.rand((draws, 3), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    hard, m = straight_through_mask(p, u, torch.ones(draws, 3, dtype=torch.bool), tau)
    nll = torch.where(hard, c_masked, c_clean)
    terms = element_terms(hard, m, p, w.expand(draws, 3), nll, gradient)
    (estimate,) = torch.autograd.grad(terms.sum() / draws, theta)
    (exact,) = torch.autograd.grad((torch.sigmoid(theta) * w * c_masked).sum(), theta)
    return estimate, exact


def test_estimators_share_the_loss_value_and_score_is_unbiased():
    """All three `gradient` choices give the same loss value; the "score" own-term gradient is
    unbiased (within 5 standard errors of 400k draws), while straight-through is not: its clean
    draws carry the untrained cross-entropy ("st-clean-ce"), and even without them ("st") the
    relaxation's slope is not dE[m]/dp."""
    from meld_diffusion.meld import GRADIENTS

    draws = 400_000
    est = {g: _own_term_estimates(g, 1.0, draws) for g in GRADIENTS}
    exact = est["score"][1]
    score = est["score"][0]
    # standard error of the score estimate, per element: hard w c / p has variance w^2 c^2 (1-p)/p
    p = torch.sigmoid(torch.tensor([-3.0, -1.0, 0.5], dtype=torch.float64))
    w_c = torch.tensor([2.0 * 0.7, 1.3, 0.5 * 0.4], dtype=torch.float64)
    se = w_c * ((1 - p) / p / draws).sqrt() * p * (1 - p)  # d p / d theta = p (1 - p)
    assert bool(((score - exact).abs() < 5 * se).all()), (score, exact, se)
    for biased in ("st", "st-clean-ce"):
        rel = ((est[biased][0] - exact).abs() / exact.abs()).max()
        assert float(rel) > 0.3, (biased, est[biased][0], exact)


def test_st_gradient_ignores_the_cross_entropy_of_clean_elements(meld_model, qm9_rows):
    """The default "st" terms: a clean element contributes exactly 0 in value and gradient, so
    its (never trained) cross-entropy cannot steer phi; "st-clean-ce" (0.2.x) lets it."""
    from meld_diffusion.meld import element_terms

    g = torch.Generator().manual_seed(3)
    hard = torch.rand(4, 7, generator=g) < 0.4
    p = torch.rand(4, 7, generator=g, dtype=torch.float64).clamp(0.05, 0.95).requires_grad_()
    m = hard.double() + p - p.detach()
    weight = torch.rand(4, 7, generator=g, dtype=torch.float64) + 0.5
    nll = torch.rand(4, 7, generator=g, dtype=torch.float64)
    moved = torch.where(hard, nll, nll + 10.0)  # only the clean elements' CE changes
    for gradient, same in (("st", True), ("st-clean-ce", False), ("score", True)):
        grads = [
            torch.autograd.grad(element_terms(hard, m, p, weight, v, gradient).sum(), p)[0]
            for v in (nll, moved)
        ]
        assert torch.equal(grads[0], grads[1]) == same, gradient
        values = [element_terms(hard, m, p, weight, v, gradient).detach() for v in (nll, moved)]
        ref = hard.double() * weight * nll
        assert_close(f"{gradient} value", values[0], ref, 1e-12)
        if same:
            assert_close(f"{gradient} value (moved)", values[1], ref, 1e-12)


def test_normalised_class_rates_have_geometric_mean_one():
    """Our option for the class-level arm: the eight rates divided by their geometric mean."""
    torch.manual_seed(0)
    r = ClassRates(normalise=True)
    torch.nn.init.normal_(r.a, std=1.0)
    raw = ClassRates()
    raw.load_state_dict(r.state_dict())
    w, w_raw = r.table(), raw.table()
    assert float(w.detach().std()) > 0.05
    assert abs(float(torch.log(w).mean())) < 1e-6
    assert_close("proportional", w_raw / w_raw[0, 0], w / w[0, 0], 1e-6)
    assert torch.equal(r(N)[0], w[0]) and torch.equal(r(N)[-1], w[1])
    assert list(r.rates().values()) == pytest.approx(w.detach().flatten().tolist())


def test_recon_term_is_the_masked_cross_entropy_at_the_cut_off(meld_model, qm9_rows):
    """`meld_loss(recon=True)` adds ``1[masked at delta] CE(g_delta)`` (fresh uniforms drawn
    after u), computed here by hand; with every rate near 0 the truncated loss vanishes (the
    degenerate direction) while the reconstruction term does not."""
    x, n = _batch(qm9_rows)
    t = sample_t(len(x), generator=torch.Generator().manual_seed(4))
    u = torch.rand(x.shape, generator=torch.Generator().manual_seed(5))
    cols = meld_model.rates.columns(len(x), N, torch.Generator().manual_seed(6))
    kw = {"max_atoms": N, "t": t, "u": u, "columns": cols, "sampling_eps": 1e-3}
    plain = meld_loss(meld_model, x, n, SCHEDULE, **kw)
    both = meld_loss(
        meld_model, x, n, SCHEDULE, recon=True, generator=torch.Generator().manual_seed(7), **kw
    )
    valid = valid_positions(n, N)
    u2 = torch.rand(x.shape, generator=torch.Generator().manual_seed(7))
    delta = torch.full((len(x),), 1e-3)
    with torch.no_grad():
        w = meld_model.rates(cols)
        hard = (u2 < SCHEDULE.mask_prob(delta, w)) & valid
        x_d = torch.where(hard, MASK_ID, x)
        logits = meld_model(x_d, delta, n, meld_model.rates.embeddings(cols))
        nll = -torch.log_softmax(logits.float(), -1).gather(-1, x[..., None]).squeeze(-1)
    expect = plain.terms.detach() + hard * nll
    assert float((hard * nll).sum()) > 0
    assert_close("recon terms", both.terms.detach(), expect, 1e-5)
    with torch.no_grad():
        meld_model.rates.f_phi.weight.zero_()
        meld_model.rates.f_phi.bias.fill_(-30.0)  # every rate ~1e-13: t^w ~ 1 for t >= delta
    plain = meld_loss(meld_model, x, n, SCHEDULE, **kw)
    both = meld_loss(
        meld_model, x, n, SCHEDULE, recon=True, generator=torch.Generator().manual_seed(7), **kw
    )
    assert float(plain.loss) < 1e-6
    assert float(both.loss) > 0.1
