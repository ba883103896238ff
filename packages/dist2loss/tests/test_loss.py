"""dist2_loss against the float64 loop oracle, its limits, and its gradient in closed form."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from dist2loss import (
    dist2_kl,
    dist2_loss,
    dist2_targets,
    neighbor_negative_nll,
    number_table,
    place_values,
)
from dist2loss.reference import reference_dist2_loss, reference_terms

from shared_core.testing import assert_close

V = 23
RATIOS = {torch.float64: 1e-10, torch.float32: 1e-5, torch.bfloat16: 1e-2}


@pytest.fixture
def table():
    # V_d = ids 5..16 standing for 0..11, so the distances span 0..121
    return number_table({5 + i: float(i) for i in range(12)}, V)


def _oracle(
    logits, labels, table, tau, alpha, *, beta=0.1, negatives=0, weights=None,
    normalise="tokens", num_items_in_batch=None, num_metric_in_batch=None, **position,
):  # fmt: skip
    """What `dist2_loss` must give, from the float64 oracle: the paper's per-token average
    (`reference_dist2_loss`) by default; with ``normalise="metric"`` the KL/NN sum is divided by
    the metric positions, and outside counts replace this call's counts."""
    kw = {"negatives": negatives, "weights": weights, **position}
    if normalise == "tokens" and num_items_in_batch is None:
        return reference_dist2_loss(logits, labels, table, tau=tau, alpha=alpha, beta=beta, **kw)
    terms = reference_terms(logits, labels, table, tau, negatives=negatives, **position)
    w = [1.0] * len(terms) if weights is None else weights.reshape(-1).tolist()
    seen = [(t, w_t) for t, w_t in zip(terms, w, strict=True) if t is not None]
    metric = [(t, w_t) for t, w_t in seen if t.kl is not None]
    ce = sum(t.ce for t, _ in seen)
    aux = sum(w_t * (alpha * t.kl + beta * (t.nn or 0.0)) for t, w_t in metric)
    n_ce = num_items_in_batch or len(seen)
    n_aux = n_ce if normalise == "tokens" else (num_metric_in_batch or len(metric))
    return ce / n_ce + aux / n_aux


def _batch(shape, seed=0, metric_share=0.7):
    g = torch.Generator().manual_seed(seed)
    logits = 2.0 * torch.randn(*shape, V, generator=g, dtype=torch.float64)
    metric = torch.randint(5, 17, shape, generator=g)
    other = torch.randint(0, V, shape, generator=g)
    labels = torch.where(torch.rand(shape, generator=g) < metric_share, metric, other)
    labels.view(-1)[0] = -100
    return logits, labels


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(9,), (3, 5), (2, 3, 4)])
@pytest.mark.parametrize(
    ("restrict", "normalise", "tau", "alpha"),
    [(True, "tokens", 1.0, 0.1), (False, "metric", 4.0, 1.0), (True, "metric", 0.3, 2.0)],
)
def test_matches_reference(device, table, dtype, shape, restrict, normalise, tau, alpha):
    logits, labels = _batch(shape)
    weights = torch.rand(shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    ref = _oracle(
        logits, labels, table, tau, alpha, restrict=restrict, weights=weights, normalise=normalise
    )
    fast = dist2_loss(
        logits.to(device, dtype),
        labels.to(device),
        table,
        tau,
        alpha,
        restrict=restrict,
        weights=weights.to(device),
        normalise=normalise,
    )
    assert fast.dtype == dtype
    # bfloat16 rounds the logits themselves: compare with the reference on the rounded logits
    ref = (
        _oracle(
            logits.to(dtype).double(),
            labels,
            table,
            tau,
            alpha,
            restrict=restrict,
            weights=weights,
            normalise=normalise,
        )
        if dtype == torch.bfloat16
        else ref
    )
    assert_close("loss", torch.tensor([ref], dtype=torch.float64), fast.reshape(1), RATIOS[dtype])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_gradient_is_q_minus_target(device, table, dtype):
    """d KL_t / d logits = softmax over V_d minus p_d on V_d, and 0 elsewhere (restricted)."""
    logits, labels = _batch((4, 6))
    x = logits.to(device, dtype).requires_grad_(True)
    dist2_kl(x, labels.to(device), table, 1.5, restrict=True).sum().backward()
    ids = table.token_ids
    metric = (labels[..., None] == ids).any(-1)
    p = dist2_targets(labels, table, 1.5).nan_to_num(0.0)
    q = torch.softmax(x.detach().double().cpu()[..., ids], -1) * metric[..., None]
    expected = torch.zeros_like(logits)
    expected[..., ids] = q - p
    assert_close("grad", expected, x.grad, RATIOS[dtype])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_full_vocabulary_gradient_is_softmax_minus_target(device, table, dtype):
    """The paper's form (default): d KL_t / d logits = softmax(logits) - p_d (p_d = 0 off V_d)."""
    logits, labels = _batch((4, 6))
    x = logits.to(device, dtype).requires_grad_(True)
    dist2_kl(x, labels.to(device), table, 1.5).sum().backward()
    metric = (labels[..., None] == table.token_ids).any(-1)
    expected = torch.softmax(logits, -1) * metric[..., None]
    expected[..., table.token_ids] -= dist2_targets(labels, table, 1.5).nan_to_num(0.0)
    assert_close("grad", expected, x.grad, RATIOS[dtype])


def test_autograd_gradient_of_full_loss_matches_reference_finite_difference(table):
    logits, labels = _batch((2, 4))
    x = logits.clone().requires_grad_(True)
    dist2_loss(x, labels, table, 2.0, 0.5).backward()
    eps, fd = 1e-6, torch.zeros_like(logits)
    for i in range(logits.numel()):
        up, dn = logits.clone(), logits.clone()
        up.view(-1)[i] += eps
        dn.view(-1)[i] -= eps
        fd.view(-1)[i] = (
            _oracle(up, labels, table, 2.0, 0.5) - _oracle(dn, labels, table, 2.0, 0.5)
        ) / (2 * eps)
    assert_close("grad", fd, x.grad, 1e-7)


def test_tau_to_zero_is_restricted_one_hot_cross_entropy(table):
    logits, labels = _batch((5, 7))
    kl = dist2_kl(logits, labels, table, tau=1e-3, restrict=True)  # p_d underflows to one-hot
    ids = table.token_ids
    metric = (labels[..., None] == ids).any(-1)
    slot = (labels[..., None] == ids).long().argmax(-1)
    ce = -torch.log_softmax(logits[..., ids], -1).gather(-1, slot[..., None]).squeeze(-1)
    assert_close("kl vs restricted CE", ce * metric, kl, 1e-12)
    # the full-vocabulary form (default) tends to plain CE at the metric positions
    full = dist2_kl(logits, labels, table, tau=1e-3)
    plain = F.cross_entropy(
        logits.reshape(-1, V), labels.clamp(min=0).reshape(-1), reduction="none"
    )
    assert_close("kl vs CE", plain.reshape(labels.shape) * metric, full, 1e-12)


def test_tau_to_infinity_is_uniform_over_metric_tokens(table):
    logits, labels = _batch((5, 7))
    p = dist2_targets(labels, table, tau=1e12)
    metric = (labels[..., None] == table.token_ids).any(-1)
    k = table.size
    assert torch.allclose(p[metric], torch.full_like(p[metric], 1.0 / k), atol=1e-9)
    assert torch.isnan(p[~metric]).all()
    logq = torch.log_softmax(logits[..., table.token_ids], -1)
    expected = (-math.log(k) - logq.mean(-1)) * metric
    assert_close("kl vs uniform", expected, dist2_loss_kl(logits, labels, table, 1e12), 1e-9)


def dist2_loss_kl(logits, labels, table, tau):
    return dist2_kl(logits, labels, table, tau, restrict=True)


def test_alpha_zero_is_plain_cross_entropy_bit_for_bit(table):
    logits, labels = _batch((3, 8))
    for dtype in (torch.float64, torch.float32, torch.bfloat16):
        a = logits.to(dtype).clone().requires_grad_(True)
        b = logits.to(dtype).clone().requires_grad_(True)
        ours = dist2_loss(a, labels, table, tau=1.0, alpha=0.0)
        plain = F.cross_entropy(b.reshape(-1, V), labels.reshape(-1))
        ours.backward()
        plain.backward()
        assert torch.equal(ours, plain) and ours.dtype == plain.dtype
        assert torch.equal(a.grad, b.grad)


def test_non_metric_positions_contribute_nothing(table):
    logits, labels = _batch((4, 6))
    kl = dist2_kl(logits, labels, table, 1.0)
    metric = (labels[..., None] == table.token_ids).any(-1)
    assert metric.any() and (~metric).any()
    assert torch.equal(kl[~metric], torch.zeros_like(kl[~metric]))
    # their logits do not enter the KL term: no gradient reaches them
    x = logits.clone().requires_grad_(True)
    dist2_kl(x, labels, table, 1.0).sum().backward()
    assert torch.equal(x.grad[~metric], torch.zeros_like(x.grad[~metric]))
    # and the loss on a batch with no metric label is CE whatever alpha is
    plain = torch.where(metric, 0, labels)
    assert torch.equal(
        dist2_loss(logits, plain, table, alpha=3.0),
        F.cross_entropy(logits.reshape(-1, V), plain.reshape(-1)),
    )


def test_kl_is_non_negative_and_zero_exactly_at_the_target(table):
    logits, labels = _batch((6, 6), seed=3)
    for tau in (0.5, 1.0, 4.0):
        assert (dist2_kl(logits, labels, table, tau) >= 0).all()
        for restrict in (True, False):
            assert (dist2_kl(logits, labels, table, tau, restrict=restrict) >= -1e-15).all()
    metric = (labels[..., None] == table.token_ids).any(-1)
    p = dist2_targets(labels, table, 2.0)
    at_target = logits.clone()
    at_target[..., table.token_ids] = torch.where(metric[..., None], p.log() + 7.0, 0.0)
    kl = dist2_kl(at_target, labels, table, 2.0, restrict=True)
    assert kl.abs().max() < 1e-12
    nudged = at_target.clone()
    noise = 0.3 * torch.randn(6, 6, table.size, generator=torch.Generator().manual_seed(4))
    nudged[..., table.token_ids] += noise.double()
    assert (dist2_kl(nudged, labels, table, 2.0, restrict=True)[metric] > 1e-6).all()
    # full vocabulary: zero only once the model puts no mass outside V_d
    assert (dist2_kl(at_target, labels, table, 2.0)[metric] > 1e-6).all()
    sealed = at_target.clone()
    outside = torch.ones(V, dtype=torch.bool)
    outside[table.token_ids] = False
    sealed[..., outside] = -1e4
    assert dist2_kl(sealed, labels, table, 2.0).abs().max() < 1e-12


def test_target_maximises_entropy_regularised_reward(table):
    """Gradient ascent on J(pi) = E_pi[-d(., g)] + tau H(pi) over pi in the simplex on V_d
    reaches p_d: DIST2Loss's target is the entropy-regularised RL optimum."""
    # a tau at which no target probability is tiny: plain (Euclidean) gradient ascent on the
    # softmax parameters then converges geometrically (tiny ones would converge like 1/t)
    tau, g = 25.0, 7
    d = table.distance[table.token_ids.tolist().index(g)]
    theta = torch.zeros(table.size, dtype=torch.float64, requires_grad=True)
    for _ in range(3000):
        pi = torch.softmax(theta, 0)
        objective = (pi * -d).sum() - tau * (pi * pi.log()).sum()
        (grad,) = torch.autograd.grad(objective, theta)
        with torch.no_grad():
            theta += 0.05 * grad
    target = dist2_targets(torch.tensor([g]), table, tau)[0]
    assert target.min() > 1e-3
    assert_close("pi vs p_d", target, torch.softmax(theta.detach(), 0), 1e-8)


def test_targets_are_a_discretised_gaussian_of_variance_tau_over_two(table):
    tau = 2.0
    p = dist2_targets(torch.tensor([11]), table, tau)[0]  # g = value 6, mid-range
    values = table.values
    mean = (p * values).sum()
    var = (p * (values - mean) ** 2).sum()
    assert abs(float(mean) - 6.0) < 1e-3 and abs(float(var) - tau / 2) < 1e-3


def test_place_values_and_weights(table):
    labels = torch.tensor([[0, 5, 6, 7, 1, 8, 9, -100], [5, 2, 6, 7, 8, 9, 10, 3]])
    expected = torch.tensor([[-1, 2, 1, 0, -1, 1, 0, -1], [0, -1, 4, 3, 2, 1, 0, -1]])
    assert torch.equal(place_values(labels, table), expected)
    logits = torch.randn(2, 8, V, dtype=torch.float64)
    w = (place_values(labels, table) + 1).clamp(min=0).double()
    ref = _oracle(logits, labels, table, 2.0, 1.0, weights=w, normalise="metric")
    fast = dist2_loss(logits, labels, table, 2.0, 1.0, weights=w, normalise="metric")
    assert_close("place-weighted", torch.tensor([ref], dtype=torch.float64), fast.reshape(1), 1e-10)


def test_parts_and_normalisation(table):
    logits, labels = _batch((4, 5))
    loss, parts = dist2_loss(logits, labels, table, 1.0, 0.25, return_parts=True)
    assert math.isclose(float(loss), parts["ce"] + 0.25 * parts["dist2"], rel_tol=1e-12)
    kl = dist2_kl(logits, labels, table, 1.0)
    assert math.isclose(parts["dist2"], float(kl.sum() / (labels != -100).sum()), rel_tol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("normalise", ["tokens", "metric"])
@pytest.mark.parametrize(("restrict", "target"), [(False, "distance"), (True, "uniform")])
def test_fused_backward_matches_autograd_path(device, table, dtype, normalise, restrict, target):
    """With grad-requiring float logits the loss takes the fused CE+KL backward; unit weights
    force the plain autograd path: values and gradients must agree."""
    logits, labels = _batch((3, 7), seed=5)
    labels[1, :3] = -100
    fused = logits.to(device, dtype).clone().requires_grad_(True)
    plain = logits.to(device, dtype).clone().requires_grad_(True)
    kw = {"normalise": normalise, "restrict": restrict, "target": target}
    a = dist2_loss(fused, labels.to(device), table, 2.0, 0.5, **kw)
    ones = torch.ones(labels.shape, dtype=dtype, device=device)
    b = dist2_loss(plain, labels.to(device), table, 2.0, 0.5, weights=ones, **kw)
    a.backward()
    b.backward()
    assert a.grad_fn is not None and "Fused" in type(a.grad_fn).__name__
    assert_close("loss", b.detach().reshape(1), a.detach().reshape(1), RATIOS[dtype])
    assert_close("grad", plain.grad, fused.grad, RATIOS[dtype])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(
    ("restrict", "target", "negatives", "normalise", "counts"),
    [
        (False, "distance", 2, "tokens", None),
        (True, "uniform", 3, "metric", None),
        (False, "uniform", 0, "tokens", (40, None)),
        (False, "distance", 1, "metric", (40, 17)),
    ],
)
def test_options_match_reference(
    device, table, dtype, restrict, target, negatives, normalise, counts
):
    """Uniform smoothing, neighbor negatives and outside counts against the float64 loop."""
    logits, labels = _batch((3, 5), seed=7)
    weights = torch.rand((3, 5), generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    n_items, n_metric = counts or (None, None)
    kw = {
        "restrict": restrict,
        "target": target,
        "negatives": negatives,
        "beta": 0.7,
        "normalise": normalise,
        "num_items_in_batch": n_items,
        "num_metric_in_batch": n_metric,
    }
    ref = _oracle(logits, labels, table, 1.5, 0.4, weights=weights, **kw)
    x = logits.to(device, dtype).requires_grad_(True)
    fast = dist2_loss(x, labels.to(device), table, 1.5, 0.4, weights=weights.to(device), **kw)
    assert_close("loss", torch.tensor([ref], dtype=torch.float64), fast.reshape(1), RATIOS[dtype])


def test_gradient_with_negatives_matches_reference_finite_difference(table):
    logits, labels = _batch((2, 4), seed=9)
    kw = {"target": "uniform", "negatives": 2, "beta": 0.5}
    x = logits.clone().requires_grad_(True)
    dist2_loss(x, labels, table, 2.0, 0.5, **kw).backward()
    eps, fd = 1e-6, torch.zeros_like(logits)
    for i in range(logits.numel()):
        up, dn = logits.clone(), logits.clone()
        up.view(-1)[i] += eps
        dn.view(-1)[i] -= eps
        fd.view(-1)[i] = (
            _oracle(up, labels, table, 2.0, 0.5, **kw) - _oracle(dn, labels, table, 2.0, 0.5, **kw)
        ) / (2 * eps)
    assert_close("grad", fd, x.grad, 1e-7)


def test_uniform_target_keeps_the_gold_mass_and_flattens_the_rest(table):
    labels = torch.tensor([5, 10, 16])
    p = dist2_targets(labels, table, 2.0)
    u = dist2_targets(labels, table, 2.0, target="uniform")
    assert_close("sums", torch.ones(3, dtype=torch.float64), u.sum(-1), 1e-12)
    for row, slot in enumerate((0, 5, 11)):
        assert math.isclose(float(u[row, slot]), float(p[row, slot]), rel_tol=1e-12)
        rest = torch.cat([u[row, :slot], u[row, slot + 1 :]])
        assert torch.allclose(rest, torch.full_like(rest, (1 - float(p[row, slot])) / 11))


def test_neighbor_negatives_are_the_nearest_members(table):
    nb = table.neighbors(2, torch.device("cpu"))
    assert nb.shape == (12, 3)
    assert nb[5].tolist() == [5, 4, 6]  # value 5: itself, then 4 and 6 (tie in table order)
    assert nb[0].tolist() == [0, 1, 2] and nb[11].tolist() == [11, 10, 9]
    # k = K - 1: every other member is a negative, the term is CE restricted to V_d
    logits, labels = _batch((4, 5), seed=11)
    nn = neighbor_negative_nll(logits, labels, table, table.size - 1)
    metric = (labels[..., None] == table.token_ids).any(-1)
    slot = (labels[..., None] == table.token_ids).long().argmax(-1)
    ce = -torch.log_softmax(logits[..., table.token_ids], -1).gather(-1, slot[..., None])
    assert_close("nn vs restricted CE", ce.squeeze(-1) * metric, nn, 1e-12)
    # a gold far above its neighbors has (almost) no neighbor-negative loss
    far = logits.clone()
    far.view(-1, V)[torch.arange(20), labels.view(-1).clamp(min=0)] = 100.0
    assert neighbor_negative_nll(far, labels, table, 2)[metric].max() < 1e-30


@pytest.mark.parametrize("normalise", ["tokens", "metric"])
def test_split_batches_with_outside_counts_add_up_to_the_whole(table, normalise):
    """Gradient accumulation at the function level: parts normalised by the whole batch's
    counts sum to the whole batch's loss, and so do their gradients."""
    logits, labels = _batch((6, 5), seed=13)
    labels[4:, 2:] = -100
    kw = {"negatives": 1, "normalise": normalise}
    whole_x = logits.clone().requires_grad_(True)
    whole = dist2_loss(whole_x, labels, table, 1.0, 0.3, **kw)
    whole.backward()
    n_items = int((labels != -100).sum())
    n_metric = int(((labels[..., None] == table.token_ids).any(-1)).sum())
    part_x = logits.clone().requires_grad_(True)
    total = sum(
        dist2_loss(
            part_x[i : i + 2], labels[i : i + 2], table, 1.0, 0.3,
            num_items_in_batch=torch.tensor(n_items), num_metric_in_batch=n_metric, **kw,
        )
        for i in (0, 2, 4)
    )  # fmt: skip
    total.backward()
    assert_close("loss", whole.detach().reshape(1), total.detach().reshape(1), 1e-12)
    assert_close("grad", whole_x.grad, part_x.grad, 1e-12)
