"""Batched conjugate gradient (CG) for many small SPD systems at once (MesaNet, Sec. 3.2).

Every row (token, head, batch element) runs its own CG with its own step sizes; the
matrix is only touched through a ``matvec`` callback, so the same routine serves the
chunkwise-parallel form (where one matvec is a gated linear-attention pass) and the
one-token decoding step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass
class CGResult:
    """The solution ``x``, the number of iterations run and the per-iteration residual norms."""

    x: torch.Tensor
    iterations: int
    residual_norms: list[torch.Tensor]


def _dot(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Row-wise inner product ``sum_i x_i y_i`` with a kept last axis of size 1."""
    return torch.linalg.vecdot(x, y)[..., None]


def conjugate_gradient(
    matvec: Callable[[torch.Tensor], torch.Tensor],
    b: torch.Tensor,
    x0: torch.Tensor | None = None,
    max_iter: int = 30,
    tol: float | None = None,
    track_residuals: bool = False,
) -> CGResult:
    """Solve ``A x = b`` row-wise by Hestenes-Stiefel CG, for SPD ``A`` given by `matvec`.

    ``b`` has shape ``(..., d)``; each leading index is an independent system. The loop
    runs `max_iter` steps, or stops early once every row has
    ``||r|| <= tol * ||b||`` (the paper's dynamic test-time compute). Rows that have
    converged are frozen, so a looser tolerance never changes a converged row.

    A row whose residual is exactly zero gets a zero step (its denominators ``p^T A p`` and
    ``r^T r`` are clamped to the smallest normal number instead of dividing 0 by 0; fla adds
    1e-5 to every denominator instead, which biases the step of every row). With gradients
    disabled the updates run in place (no allocation per iteration); with gradients enabled
    the same arithmetic runs out of place so that autograd can differentiate through it.

    In exact arithmetic CG terminates in at most ``d`` steps; the A-norm of the error
    ``||x_i - x*||_A`` decreases monotonically (the 2-norm of the residual need not).
    """
    if not isinstance(max_iter, int) or isinstance(max_iter, bool) or max_iter < 0:
        raise ValueError(f"max_iter: expected a non-negative int, got {max_iter!r}")
    if tol is not None and not tol >= 0:
        raise ValueError(f"tol: expected a non-negative float or None, got {tol}")
    if not isinstance(b, torch.Tensor):
        raise TypeError(f"b: expected a torch.Tensor, got {type(b).__name__}")
    if not b.is_floating_point():
        raise TypeError(f"b: expected a floating-point tensor, got dtype {b.dtype}")
    if b.ndim == 0 or b.shape[-1] == 0:
        raise ValueError(f"b: expected shape (..., d) with d >= 1, got {tuple(b.shape)}")
    if not bool(torch.isfinite(b).all()):
        raise ValueError("b: contains NaN or infinite values")
    if x0 is not None:
        if not isinstance(x0, torch.Tensor) or x0.shape != b.shape:
            got = tuple(x0.shape) if isinstance(x0, torch.Tensor) else type(x0).__name__
            raise ValueError(f"x0: expected a tensor of the shape of b {tuple(b.shape)}, got {got}")
        if not bool(torch.isfinite(x0).all()):
            raise ValueError("x0: contains NaN or infinite values")
    inplace = not torch.is_grad_enabled()
    tiny = torch.finfo(b.dtype).tiny
    if x0 is None:
        x = torch.zeros_like(b)
        r = b.clone()
    else:
        x = x0.clone()
        r = b - matvec(x)
    p = r.clone()
    delta = _dot(r, r)
    bound = None if tol is None else (tol**2) * _dot(b, b)
    history: list[torch.Tensor] = [delta.sqrt()[..., 0]] if track_residuals else []
    it = 0
    for it in range(1, max_iter + 1):
        active = None
        if bound is not None:
            active = delta > bound
            if not bool(active.any()):
                it -= 1
                break
        Ap = matvec(p)
        alpha = delta / _dot(p, Ap).clamp_min(tiny)
        if active is not None:
            alpha = alpha * active
        if inplace:
            x.addcmul_(alpha, p)
            r.addcmul_(alpha, Ap, value=-1.0)
        else:
            x = x + alpha * p
            r = r - alpha * Ap
        delta_new = _dot(r, r)
        step = delta_new / delta.clamp_min(tiny)
        if active is not None:
            p = torch.where(active, r + step * p, p)
        elif inplace:
            p.mul_(step).add_(r)
        else:
            p = r + step * p
        delta = delta_new
        if track_residuals:
            history.append(delta.sqrt()[..., 0])
    return CGResult(x=x, iterations=it, residual_norms=history)
