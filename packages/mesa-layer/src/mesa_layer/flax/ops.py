"""JAX ops of the Mesa layer: batched CG and the chunkwise-parallel form with a solve-backward.

The same algebra as `mesa_layer.torch.chunk` (MesaNet, Sec. 3.2); see that module for the
equations. ``jax.custom_vjp`` gives ``q* = (H_t + Lambda)^{-1} q_t`` the backward of a
second CG solve with the same SPD matrix. CG runs a fixed number of steps here
(``lax.fori_loop``), which keeps it jit-friendly.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp


def _safe_div(num: jax.Array, den: jax.Array) -> jax.Array:
    ok = den > 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), 0.0)


def conjugate_gradient(
    matvec: Callable[[jax.Array], jax.Array],
    b: jax.Array,
    x0: jax.Array | None = None,
    max_iter: int = 30,
) -> jax.Array:
    """Row-wise Hestenes-Stiefel CG for ``A x = b``, ``b`` of shape ``(..., d)``, fixed steps."""
    x = jnp.zeros_like(b) if x0 is None else x0
    r = b if x0 is None else b - matvec(x0)
    p = r
    delta = jnp.sum(r * r, -1, keepdims=True)

    def body(_, carry):
        x, r, p, delta = carry
        Ap = matvec(p)
        alpha = _safe_div(delta, jnp.sum(p * Ap, -1, keepdims=True))
        x = x + alpha * p
        r = r - alpha * Ap
        delta_new = jnp.sum(r * r, -1, keepdims=True)
        p = r + _safe_div(delta_new, delta) * p
        return x, r, p, delta_new

    return jax.lax.fori_loop(0, max_iter, body, (x, r, p, delta))[0]


def to_chunks(x: jax.Array, C: int) -> jax.Array:
    """``(B, T, H, ...)`` -> ``(B, H, N, C, ...)``."""
    B, T, H = x.shape[:3]
    return jnp.moveaxis(x.reshape(B, T // C, C, H, *x.shape[3:]), 3, 1)


def from_chunks(x: jax.Array) -> jax.Array:
    B, H, N, C = x.shape[:4]
    return jnp.moveaxis(x, 1, 3).reshape(B, N * C, H, *x.shape[4:])


def gate_mask(b: jax.Array, beta: jax.Array) -> jax.Array:
    """``M_ij = exp(b_i - b_j) beta_j 1[i >= j]``."""
    C = b.shape[-1]
    causal = jnp.tril(jnp.ones((C, C), dtype=bool))
    diff = jnp.where(causal, b[..., :, None] - b[..., None, :], -jnp.inf)
    return jnp.exp(diff) * beta[..., None, :]


def chunk_states(k: jax.Array, val: jax.Array, b: jax.Array, beta: jax.Array, S0: jax.Array):
    """States before each chunk ``(B, H, N, Dv, K)`` and the final state."""
    last = b[..., -1]
    w = jnp.exp(last[..., None] - b) * beta
    inc = jnp.swapaxes(val * w[..., None], -1, -2) @ k  # (B, H, N, Dv, K)

    def step(S, xs):
        decay, dS = xs
        return jnp.exp(decay)[..., None, None] * S + dS, S

    final, starts = jax.lax.scan(step, S0, (jnp.moveaxis(last, 2, 0), jnp.moveaxis(inc, 2, 0)))
    return jnp.moveaxis(starts, 0, 2), final


def gla_pass(X, k, val, S_start, b, M):
    inter = jnp.exp(b)[..., None] * (X @ jnp.swapaxes(S_start, -1, -2))
    intra = ((X @ jnp.swapaxes(k, -1, -2)) * M) @ val
    return inter + intra


def _matvec(X, k, b, beta, Lambda, H0):
    M = gate_mask(b, beta)
    H_start, _ = chunk_states(k, k, b, beta, H0)
    return gla_pass(X, k, k, H_start, b, M) + X * Lambda[None, :, None, None, :]


@partial(jax.custom_vjp, nondiff_argnums=(6,))
def mesa_solve(q, k, b, beta, Lambda, H0, max_iter):
    """``q*_t = (H_t + Lambda)^{-1} q_t`` over chunked inputs ``(B, H, N, C, K)``."""
    M = gate_mask(b, beta)
    H_start, _ = chunk_states(k, k, b, beta, H0)
    mv = lambda X: gla_pass(X, k, k, H_start, b, M) + X * Lambda[None, :, None, None, :]  # noqa: E731
    return conjugate_gradient(mv, q, max_iter=max_iter)


def _solve_fwd(q, k, b, beta, Lambda, H0, max_iter):
    q_star = mesa_solve(q, k, b, beta, Lambda, H0, max_iter)
    return q_star, (q_star, k, b, beta, Lambda, H0)


def _solve_bwd(max_iter, res, dq_star):
    q_star, k, b, beta, Lambda, H0 = res
    M = gate_mask(b, beta)
    H_start, _ = chunk_states(k, k, b, beta, H0)
    mv = lambda X: gla_pass(X, k, k, H_start, b, M) + X * Lambda[None, :, None, None, :]  # noqa: E731
    dq = conjugate_gradient(mv, dq_star, max_iter=max_iter)  # second solve, same SPD matrix
    # dL/dA_t = -dq_t q*_t^T, pushed into the parameters of A through one matvec pass
    _, vjp = jax.vjp(lambda *p: _matvec(q_star, *p), k, b, beta, Lambda, H0)
    return (dq, *vjp(-dq))


mesa_solve.defvjp(_solve_fwd, _solve_bwd)


def mesa_chunk(
    q, k, v, g, beta, Lambda, initial_state=None, chunk_size: int = 64, max_cg_steps: int = 30
):
    """Chunkwise Mesa outputs ``(B, T, H, V)`` and final ``(H_T, G_T)``; shapes as in torch."""
    B, T, NH, K = q.shape
    V = v.shape[-1]
    dt = jnp.float64 if q.dtype == jnp.float64 else jnp.float32
    C = min(chunk_size, T)
    T_pad = -(-T // C) * C

    def prep(x):
        x = x.astype(dt)
        pad = [(0, 0), (0, T_pad - T)] + [(0, 0)] * (x.ndim - 2)
        return to_chunks(jnp.pad(x, pad), C)

    q_c, k_c, v_c, g_c, beta_c = (prep(x) for x in (q, k, v, g, beta))
    b = jnp.cumsum(g_c, -1)
    if initial_state is None:
        H0, G0 = jnp.zeros((B, NH, K, K), dt), jnp.zeros((B, NH, V, K), dt)
    else:
        H0, G0 = (s.astype(dt) for s in initial_state)
    q_star = mesa_solve(q_c, k_c, b, beta_c, Lambda.astype(dt), H0, max_cg_steps)
    M = gate_mask(b, beta_c)
    G_start, G_T = chunk_states(k_c, v_c, b, beta_c, G0)
    _, H_T = chunk_states(k_c, k_c, b, beta_c, H0)
    o = gla_pass(q_star, k_c, v_c, G_start, b, M)
    return from_chunks(o)[:, :T].astype(v.dtype), (H_T, G_T)
