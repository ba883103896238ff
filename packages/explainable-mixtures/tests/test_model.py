"""RuleMixture against the loop oracle, the exactness theorem, invariances and gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from explainable_mixtures import reference
from explainable_mixtures.components import GaussianComponents
from explainable_mixtures.data import planted, planted_boxes
from explainable_mixtures.model import RuleMixture

from shared_core.testing import assert_close


def _model(k=3, d=2, dy=2, S=2, seed=0, x_loc=None, x_scale=None):
    g = torch.Generator().manual_seed(seed)
    f64 = torch.float64
    centre = torch.randn(k, d, generator=g, dtype=f64)
    A = torch.randn(k, S, dy, dy, generator=g, dtype=f64)
    comps = GaussianComponents(
        torch.randn(k, S, dy, generator=g, dtype=f64),
        A @ A.transpose(-1, -2) + 0.3 * torch.eye(dy, dtype=f64),
    )
    with torch.no_grad():
        comps.sub_logits.copy_(torch.randn(k, S, generator=g, dtype=f64))
    return RuleMixture(
        centre - 0.8,
        centre + 0.8,
        0.2 + torch.rand(k, d, generator=g, dtype=f64),
        comps,
        torch.zeros(d, dtype=f64) if x_loc is None else x_loc,
        torch.ones(d, dtype=f64) if x_scale is None else x_scale,
        torch.tensor([1.5, -2.0, 0.7][:dy], dtype=f64),
        torch.tensor([2.0, 0.5, 1.3][:dy], dtype=f64),
    )


def _oracle(model, x, y, tau):
    """The loop oracle on the module's parameters, converted to user units."""
    c = model.components
    s, loc = model.y_scale, model.y_loc
    with torch.no_grad():
        means = (c.mu * s + loc).numpy()
        covs = (c.covariance() * s[:, None] * s[None, :]).numpy()
        weights = torch.softmax(c.sub_logits, -1).numpy()
        return reference.conditional_log_density(
            x.numpy(), y.numpy(), model.alpha.numpy(), model.beta.numpy(),
            model.feature_weights().numpy(), tau, weights, means, covs,
        )  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(("dy", "S"), [(1, 1), (2, 2), (3, 1)])
def test_log_density_matches_loop_oracle(device, dtype, dy, S):
    model = _model(dy=dy, S=S)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(40, 2, generator=g, dtype=torch.float64)
    y = torch.randn(40, dy, generator=g, dtype=torch.float64) * 2
    ref = torch.as_tensor(_oracle(model, x, y, 0.3))
    fast = model.to(device, dtype).log_density(x.to(device, dtype), y.to(device, dtype), 0.3)
    assert fast.dtype == dtype
    assert_close(
        "log p(y|x)", ref, fast.double().cpu(), {torch.float64: 1e-10, torch.float32: 1e-5}[dtype]
    )


def test_partition_rules_give_the_true_conditional_nll():
    """The exactness theorem: rules that partition X, with the true p_i, give the true p(y|x)."""
    table = planted(400, seed=3)
    boxes = planted_boxes()
    f64 = torch.float64
    # boxes that reach beyond [0, 1] on open sides, so no row sits near a vacuous edge
    lo = torch.as_tensor(np.where(boxes[..., 0] == 0.0, -1.0, boxes[..., 0]), dtype=f64)
    hi = torch.as_tensor(np.where(boxes[..., 1] == 1.0, 2.0, boxes[..., 1]), dtype=f64)
    comps = GaussianComponents(
        torch.as_tensor(table.means[:, None, :], dtype=f64),
        torch.as_tensor(table.covs[:, None], dtype=f64),
    )
    one = torch.ones(1, dtype=f64)
    model = RuleMixture(lo, hi, torch.ones(4, 5, dtype=f64), comps, torch.zeros(5, dtype=f64),
                        torch.ones(5, dtype=f64), 0 * one, one)  # fmt: skip
    x, y = torch.as_tensor(table.X), torch.as_tensor(table.y)
    edge = np.abs(table.X[:, :3, None] - np.array([0.4, 0.5, 0.6])).min((1, 2))
    keep = edge > 1e-3
    truth = reference.partition_log_density(
        table.X[keep], table.y[keep], [list(map(tuple, b)) for b in boxes], table.means, table.covs
    )
    with torch.no_grad():
        ours = model.log_density(x[keep], y[keep], 1e-6).numpy()
    np.testing.assert_allclose(ours, truth, rtol=0, atol=1e-8)


def test_rescaling_a_feature_with_its_standardisation_changes_nothing():
    model = _model(x_loc=torch.tensor([0.3, -1.0], dtype=torch.float64),
                   x_scale=torch.tensor([2.0, 0.5], dtype=torch.float64))  # fmt: skip
    g = torch.Generator().manual_seed(2)
    x = torch.randn(30, 2, generator=g, dtype=torch.float64)
    y = torch.randn(30, 2, generator=g, dtype=torch.float64)
    before = model.log_density(x, y, 0.2)
    c = torch.tensor([1000.0, 1.0], dtype=torch.float64)  # feature 0 now in milli-units
    model.x_loc *= c
    model.x_scale *= c
    after = model.log_density(x * c, y, 0.2)
    assert torch.allclose(before, after, atol=1e-12)


def test_objective_gradients_match_finite_differences():
    model = _model(k=2, d=2, dy=1, S=1)
    g = torch.Generator().manual_seed(4)
    x = torch.randn(12, 2, generator=g, dtype=torch.float64)
    y = torch.randn(12, 1, generator=g, dtype=torch.float64)
    params = list(model.parameters())

    def f(*values):
        with torch.no_grad():
            for p, v in zip(params, values, strict=True):
                p.copy_(v)
        return model.objective(x, y, 0.3, 0.5, 1.0)[0]

    base = [p.detach().clone() for p in params]
    loss = f(*base)
    grads = torch.autograd.grad(loss, params)
    eps = 1e-6
    for pi, (p, grad) in enumerate(zip(params, grads, strict=True)):
        for idx in list(np.ndindex(tuple(p.shape)))[:4]:
            up = [v.clone() for v in base]
            down = [v.clone() for v in base]
            up[pi][idx] += eps
            down[pi][idx] -= eps
            numeric = (f(*up).item() - f(*down).item()) / (2 * eps)
            assert grad[idx].item() == pytest.approx(numeric, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("dy", [1, 2])
def test_induced_components_match_loop_oracle(device, dtype, dy):
    """The paper's components: each rule's Gaussian is fitted to the rows it soft-covers."""
    from explainable_mixtures.components import COV_FLOOR, PRIOR_ROWS, induced_moments

    model = _model(dy=dy, S=1)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(50, 2, generator=g, dtype=torch.float64)
    u = torch.randn(50, dy, generator=g, dtype=torch.float64) * 1.5 + 0.5
    tol = {torch.float64: 1e-10, torch.float32: 2e-5}[dtype]
    m = model.to(device, dtype)
    mean, cov = induced_moments(m.log_activation(x.to(device, dtype), 0.3), u.to(device, dtype))
    a = model.feature_weights().detach().double().cpu().numpy()
    for i in range(model.k):
        ref_mean, ref_cov = reference.induced_gaussian(
            x.numpy(), u.numpy(), model.alpha[i].detach().double().cpu().numpy(),
            model.beta[i].detach().double().cpu().numpy(), a[i], 0.3, PRIOR_ROWS, COV_FLOOR,
        )  # fmt: skip
        assert_close("induced mean", torch.as_tensor(ref_mean), mean[i].double().cpu(), tol)
        assert_close("induced cov", torch.as_tensor(ref_cov), cov[i].double().cpu(), tol)


def test_induced_objective_gradients_reach_the_rules():
    """Induced components are functions of the rules: the NLL's gradient reaches alpha and beta
    through them (finite differences), and the free component parameters get none."""
    model = _model(k=2, d=2, dy=1, S=1)
    model.induced = True
    g = torch.Generator().manual_seed(6)
    x = torch.randn(16, 2, generator=g, dtype=torch.float64)
    y = torch.randn(16, 1, generator=g, dtype=torch.float64)
    loss = model.objective(x, y, 0.3, 0.5, 0.0)[0]
    grads = torch.autograd.grad(loss, [model.alpha, model.components.mu], allow_unused=True)
    assert grads[1] is None  # the component is not a free parameter
    eps = 1e-6
    for idx in [(0, 0), (1, 1)]:
        with torch.no_grad():
            model.alpha[idx] += eps
            up = model.objective(x, y, 0.3, 0.5, 0.0)[0].item()
            model.alpha[idx] -= 2 * eps
            down = model.objective(x, y, 0.3, 0.5, 0.0)[0].item()
            model.alpha[idx] += eps
        assert grads[0][idx].item() == pytest.approx((up - down) / (2 * eps), rel=1e-5, abs=1e-8)
    # `induce` freezes exactly the moments the objective used
    model.induce(x, y, 0.3)
    with torch.no_grad():
        frozen = -model.log_density(x, y, 0.3).mean().item()
    assert model.objective(x, y, 0.3, 0.0, 0.0)[0].item() == pytest.approx(frozen, rel=1e-10)
