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


def _safe_div(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    # A converged row has r = p = 0, so both terms vanish; return 0 instead of 0/0.
    # (fla adds 1e-5 to every denominator instead, which biases the step of every row.)
    ok = den > 0
    return torch.where(ok, num / torch.where(ok, den, torch.ones_like(den)), torch.zeros_like(num))


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

    In exact arithmetic CG terminates in at most ``d`` steps; the A-norm of the error
    ``||x_i - x*||_A`` decreases monotonically (the 2-norm of the residual need not).
    """
    if max_iter < 0:
        raise ValueError(f"max_iter: expected a non-negative int, got {max_iter}")
    if tol is not None and not tol >= 0:
        raise ValueError(f"tol: expected a non-negative float or None, got {tol}")
    if x0 is None:
        x = torch.zeros_like(b)
        r = b.clone()
    else:
        x = x0.clone()
        r = b - matvec(x)
    p = r.clone()
    delta = (r * r).sum(-1, keepdim=True)
    bound = None if tol is None else (tol**2) * (b * b).sum(-1, keepdim=True)
    history: list[torch.Tensor] = [delta.sqrt()[..., 0]] if track_residuals else []
    it = 0
    for it in range(1, max_iter + 1):
        if bound is not None:
            active = delta > bound
            if not bool(active.any()):
                it -= 1
                break
        Ap = matvec(p)
        alpha = _safe_div(delta, (p * Ap).sum(-1, keepdim=True))
        if bound is not None:
            alpha = torch.where(active, alpha, torch.zeros_like(alpha))
        x = x + alpha * p
        r = r - alpha * Ap
        delta_new = (r * r).sum(-1, keepdim=True)
        p_new = r + _safe_div(delta_new, delta) * p
        p = p_new if bound is None else torch.where(active, p_new, p)
        delta = delta_new
        if track_residuals:
            history.append(delta.sqrt()[..., 0])
    return CGResult(x=x, iterations=it, residual_norms=history)
