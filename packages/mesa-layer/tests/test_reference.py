"""The exact reference against closed forms: ridge regression and the GLA limit."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from conftest import make_inputs  # noqa: E402
from mesa_layer.reference import gated_linear_attention_exact, mesa_exact  # noqa: E402


def test_ungated_mesa_is_ridge_regression():
    # gamma = beta = 1: o_t = Y_t X_t^T (X_t X_t^T + Lambda)^{-1} q_t (planted signal: y = W x)
    torch.manual_seed(0)
    T, d = 30, 6
    X = torch.randn(1, T, 1, d, dtype=torch.float64)
    W = torch.randn(3, d, dtype=torch.float64)
    Y = X @ W.T
    q = torch.randn(1, T, 1, d, dtype=torch.float64)
    lam = torch.full((1, d), 0.5, dtype=torch.float64)
    zeros, ones = (
        torch.zeros(1, T, 1, dtype=torch.float64),
        torch.ones(1, T, 1, dtype=torch.float64),
    )
    o, _ = mesa_exact(q, X, Y, zeros, ones, lam)
    for t in (0, 5, T - 1):
        Xt, Yt = X[0, : t + 1, 0], Y[0, : t + 1, 0]
        ridge = Yt.T @ Xt @ torch.linalg.inv(Xt.T @ Xt + 0.5 * torch.eye(d, dtype=torch.float64))
        torch.testing.assert_close(o[0, t, 0], ridge @ q[0, t, 0], atol=1e-10, rtol=0)
    # many more examples than dims and a tiny ridge: recovers W q almost exactly
    torch.testing.assert_close(o[0, -1, 0], W @ q[0, -1, 0], atol=0.1, rtol=0.05)


def test_large_lambda_limit_is_gated_linear_attention():
    q, k, v, g, beta, _ = make_inputs(T=12)
    gla = gated_linear_attention_exact(q, k, v, g, beta)
    errs = []
    for lam in (1e1, 1e3, 1e5):
        Lambda = torch.full((2, 8), lam, dtype=torch.float64)
        o, _ = mesa_exact(q, k, v, g, beta, Lambda)
        errs.append((o * lam - gla).abs().max().item())
    assert errs[0] > errs[1] > errs[2]
    assert errs[2] < 1e-3 * gla.abs().max().item()
