"""Batched conjugate gradient: exactness after d steps, monotone error, tolerance, warm start."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mesa_layer.torch.cg import conjugate_gradient  # noqa: E402

from shared_core.testing import assert_close  # noqa: E402


def spd(n_sys: int, d: int, seed: int = 0, floor: float = 0.25) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n_sys, d, d, generator=g, dtype=torch.float64)
    return X @ X.transpose(-1, -2) / d + floor * torch.eye(d, dtype=torch.float64)


@pytest.mark.parametrize(
    "dtype,ratio", [(torch.float64, 1e-10), (torch.float32, 1e-5)], ids=["float64", "float32"]
)
@pytest.mark.parametrize("grad", [False, True], ids=["in-place", "autograd"])
def test_converged_cg_equals_linalg_solve(device, dtype, ratio, grad):
    A = spd(5, 12)
    b = torch.randn(5, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(10))
    exact = torch.linalg.solve(A, b)
    A_d, b_d = A.to(device, dtype), b.to(device, dtype).requires_grad_(grad)
    with torch.set_grad_enabled(grad):
        res = conjugate_gradient(lambda x: (A_d @ x[..., None])[..., 0], b_d, max_iter=24)
    assert res.x.requires_grad == grad
    assert_close(f"CG x {dtype}", exact, res.x, ratio)
    if grad:  # autograd through CG: d(sum x)/db = A^{-1} 1
        (db,) = torch.autograd.grad(res.x.sum(), b_d)
        assert_close(f"CG d/db {dtype}", torch.linalg.solve(A, torch.ones_like(b)), db, ratio * 10)


def test_d_steps_equal_linalg_solve():
    A = spd(5, 12)
    b = torch.randn(5, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(10))
    res = conjugate_gradient(lambda x: (A @ x[..., None])[..., 0], b, max_iter=12)
    exact = torch.linalg.solve(A, b)
    torch.testing.assert_close(res.x, exact, atol=1e-6, rtol=0)
    assert res.iterations == 12


def test_error_A_norm_falls_monotonically_with_more_steps():
    A = spd(4, 16, seed=1)
    b = torch.randn(4, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(11))
    exact = torch.linalg.solve(A, b)
    errs = []
    for k in range(0, 17):
        x = conjugate_gradient(lambda x: (A @ x[..., None])[..., 0], b, max_iter=k).x
        e = x - exact
        errs.append(((e[..., None, :] @ A @ e[..., None])[..., 0, 0]).sqrt())
    errs = torch.stack(errs)  # (steps, systems)
    assert bool((errs[1:] <= errs[:-1] + 1e-12).all())
    # d steps: exact up to the loss of orthogonality of finite precision
    assert bool((errs[-1] < 1e-6).all()) and bool((errs[0] > 1e-2).all())


def test_residual_of_the_cg_polynomial_falls_on_average():
    # the 2-norm residual is not monotone in theory; over many systems its mean is
    A = spd(64, 16, seed=2)
    b = torch.randn(64, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(12))
    res = conjugate_gradient(
        lambda x: (A @ x[..., None])[..., 0], b, max_iter=16, track_residuals=True
    )
    means = torch.stack(res.residual_norms).mean(-1)
    assert bool((means[1:] < means[:-1]).all())


def test_tolerance_stops_early_and_meets_it():
    A = spd(3, 32, seed=3, floor=2.0)  # well conditioned: converges in few steps
    b = torch.randn(3, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(13))
    res = conjugate_gradient(lambda x: (A @ x[..., None])[..., 0], b, max_iter=100, tol=1e-6)
    assert res.iterations < 32
    r = b - (A @ res.x[..., None])[..., 0]
    assert bool((r.norm(dim=-1) <= 1e-6 * b.norm(dim=-1) * (1 + 1e-9)).all())


def test_warm_start_at_the_solution_stays_there():
    A = spd(2, 8)
    b = torch.randn(2, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(14))
    exact = torch.linalg.solve(A, b)
    res = conjugate_gradient(lambda x: (A @ x[..., None])[..., 0], b, x0=exact, max_iter=5)
    torch.testing.assert_close(res.x, exact, atol=1e-12, rtol=0)


def test_zero_rhs_gives_zero_without_nan():
    A = spd(2, 4)
    res = conjugate_gradient(
        lambda x: (A @ x[..., None])[..., 0], torch.zeros(2, 4, dtype=torch.float64), max_iter=6
    )
    assert bool(torch.isfinite(res.x).all()) and bool((res.x == 0).all())


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_iter"):
        conjugate_gradient(lambda x: x, torch.ones(3), max_iter=-1)
    with pytest.raises(ValueError, match="tol"):
        conjugate_gradient(lambda x: x, torch.ones(3), tol=-1.0)
