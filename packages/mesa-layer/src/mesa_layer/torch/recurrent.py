"""Constant-memory recurrent (decoding) form of the Mesa layer (MesaNet, Sec. 3.3).

One step updates ``H_t = gamma_t H_{t-1} + beta_t k_t k_t^T`` and
``G_t = gamma_t G_{t-1} + beta_t v_t k_t^T``, then solves ``(H_t + Lambda) q*_t = q_t`` by CG
warm-started from the Jacobi guess ``q_t / (diag H_t + Lambda)`` and returns ``G_t q*_t``.
Memory per step is the state ``(H, G)``: ``O(d_k^2 + d_v d_k)`` per head, independent of t.
"""

from __future__ import annotations

import torch

from mesa_layer.torch._checks import check_cg, check_inputs, check_state, compute_dtype
from mesa_layer.torch.cg import conjugate_gradient


def mesa_step(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    Lambda: torch.Tensor,
    state: tuple[torch.Tensor, torch.Tensor],
    max_cg_steps: int = 30,
    cg_tol: float | None = None,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """One decoding step.

    Args:
        q, k: ``(B, H, K)``; v: ``(B, H, V)``; g, beta: ``(B, H)``; Lambda: ``(H, K)``.
        state: ``(H_{t-1}, G_{t-1})`` of shapes ``(B, H, K, K)``, ``(B, H, V, K)`` (float32/64).
        max_cg_steps: CG iterations from the Jacobi start; cg_tol: optional relative tolerance.

    Returns:
        ``o_t`` ``(B, H, V)`` in ``v``'s dtype and the new state.
    """
    check_inputs(q, k, v, g, beta, Lambda, step=True)
    B, NH, K = q.shape
    check_state(state, B, NH, K, v.shape[-1], name="state")
    if state[0].dtype not in (torch.float32, torch.float64) or state[1].dtype != state[0].dtype:
        raise TypeError(
            f"state: expected H and G both float32 or both float64, got {state[0].dtype}, "
            f"{state[1].dtype}"
        )
    check_cg(max_cg_steps, cg_tol)
    return _step((q, k, v, g, beta), Lambda, state, max_cg_steps, cg_tol)


def _step(
    step: tuple[torch.Tensor, ...],
    Lambda: torch.Tensor,
    state: tuple[torch.Tensor, torch.Tensor],
    max_cg_steps: int,
    cg_tol: float | None,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """`mesa_step` on ``step = (q, k, v, g, beta)`` without the input checks (for callers
    that checked the whole sequence)."""
    q, k, v, g, beta = step
    dt = state[0].dtype
    H_prev, G_prev = state
    qf, kf, vf = q.to(dt), k.to(dt), v.to(dt)
    gamma = g.to(dt).exp()[..., None, None]
    b = beta.to(dt)[..., None, None]
    H = gamma * H_prev + b * kf[..., :, None] * kf[..., None, :]
    G = gamma * G_prev + b * vf[..., :, None] * kf[..., None, :]
    lam = Lambda.to(dt)

    def matvec(x: torch.Tensor) -> torch.Tensor:
        return (H @ x[..., None])[..., 0] + lam * x

    x0 = qf / (torch.diagonal(H, dim1=-2, dim2=-1) + lam)  # Jacobi warm start
    q_star = conjugate_gradient(matvec, qf, x0=x0, max_iter=max_cg_steps, tol=cg_tol).x
    o = (G @ q_star[..., None])[..., 0]
    return o.to(v.dtype), (H, G)


def mesa_recurrent(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    Lambda: torch.Tensor,
    initial_state: tuple[torch.Tensor, torch.Tensor] | None = None,
    max_cg_steps: int = 30,
    cg_tol: float | None = None,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """The whole sequence ``(B, T, H, ·)`` by repeated `mesa_step` (the naive sequential form)."""
    check_inputs(q, k, v, g, beta, Lambda)
    B, T, NH, K = q.shape
    V = v.shape[-1]
    check_state(initial_state, B, NH, K, V)
    check_cg(max_cg_steps, cg_tol)
    dt = compute_dtype(q)
    if initial_state is None:
        state = (q.new_zeros(B, NH, K, K, dtype=dt), q.new_zeros(B, NH, V, K, dtype=dt))
    else:
        state = (initial_state[0].to(dt), initial_state[1].to(dt))
    outs = []
    for t in range(T):
        step = tuple(x[:, t] for x in (q, k, v, g, beta))
        o, state = _step(step, Lambda, state, max_cg_steps, cg_tol)
        outs.append(o)
    return torch.stack(outs, dim=1), state
