"""Chunkwise-parallel Mesa layer (MesaNet, Sec. 3.2): CG whose matvec is a gated linear-attention pass.

Within chunk ``n`` of length ``C`` let ``b_i = sum_{j<=i in chunk} g_j`` (local cumulative
log decay), ``H_[n], G_[n]`` the states before the chunk, and the causal gate mask
``M_ij = exp(b_i - b_j) beta_j 1[i >= j]``. For a block ``X`` of CG iterates (one row
per token), the products ``(H_t + Lambda) x_t`` of the whole chunk are

    A X = exp(b) * (X H_[n]^T) + ((X K^T) * M) K + X * Lambda

(chunk-start state plus the intra-chunk causal part, with keys = values = ``K``), and the
read-out ``o_t = G_t q*_t`` is the same pass with values ``V`` and state ``G_[n]``:

    O = exp(b) * (Q* G_[n]^T) + ((Q* K^T) * M) V.

States pass between chunks as ``S_[n+1] = exp(b_C) S_[n] + sum_j exp(b_C - b_j) beta_j val_j k_j^T``.
All of it runs in float32 (float64 for float64 inputs), whatever the activation dtype.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from mesa_layer.torch._checks import check_inputs, check_state, compute_dtype
from mesa_layer.torch.cg import conjugate_gradient


@dataclass
class Chunked:
    """Per-chunk tensors, layout ``(B, H, N, C, ...)``."""

    k: torch.Tensor  # (B, H, N, C, K)
    b: torch.Tensor  # (B, H, N, C) local cumulative log decay
    beta: torch.Tensor  # (B, H, N, C)


def to_chunks(x: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """``(B, T, H, ...)`` with ``T = N * C`` -> ``(B, H, N, C, ...)``."""
    B, T, H = x.shape[:3]
    x = x.reshape(B, T // chunk_size, chunk_size, H, *x.shape[3:])
    return x.movedim(3, 1)


def from_chunks(x: torch.Tensor) -> torch.Tensor:
    """``(B, H, N, C, ...)`` -> ``(B, N*C, H, ...)``."""
    B, H, N, C = x.shape[:4]
    return x.movedim(1, 3).reshape(B, N * C, H, *x.shape[4:])


def gate_mask(b: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """``M_ij = exp(b_i - b_j) beta_j 1[i >= j]``, shape ``(B, H, N, C, C)``."""
    C = b.shape[-1]
    causal = torch.ones(C, C, dtype=torch.bool, device=b.device).tril()
    diff = b[..., :, None] - b[..., None, :]
    # mask before exp: above the diagonal b_i - b_j > 0 could overflow
    diff = torch.where(causal, diff, torch.full_like(diff, -torch.inf))
    return diff.exp() * beta[..., None, :]


def chunk_states(
    k: torch.Tensor, val: torch.Tensor, b: torch.Tensor, beta: torch.Tensor, S0: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """States before every chunk, ``(B, H, N, Dv, K)``, and the final state ``(B, H, Dv, K)``.

    ``S`` is ``H`` for ``val = k`` and ``G`` for ``val = v`` (both stored as ``val x key``).
    """
    decay_last = b[..., -1]  # (B, H, N)
    w = (decay_last[..., None] - b).exp() * beta  # exp(b_C - b_j) beta_j
    increments = (val * w[..., None]).transpose(-1, -2) @ k  # (B, H, N, Dv, K)
    starts = []
    S = S0
    for n in range(k.shape[2]):
        starts.append(S)
        S = decay_last[:, :, n, None, None].exp() * S + increments[:, :, n]
    return torch.stack(starts, dim=2), S


def gla_pass(
    X: torch.Tensor,
    k: torch.Tensor,
    val: torch.Tensor,
    S_start: torch.Tensor,
    b: torch.Tensor,
    M: torch.Tensor,
) -> torch.Tensor:
    """``exp(b) * (X S_[n]^T) + ((X K^T) * M) val``: one gated linear-attention pass per chunk."""
    inter = b.exp()[..., None] * (X @ S_start.transpose(-1, -2))
    intra = ((X @ k.transpose(-1, -2)) * M) @ val
    return inter + intra


def mesa_matvec(
    X: torch.Tensor,
    k: torch.Tensor,
    b: torch.Tensor,
    M: torch.Tensor,
    H_start: torch.Tensor,
    Lambda: torch.Tensor,
) -> torch.Tensor:
    """``(H_t + Lambda) x_t`` for every token of every chunk at once."""
    return gla_pass(X, k, k, H_start, b, M) + X * Lambda[None, :, None, None, :]


class MesaSolve(torch.autograd.Function):
    """``q*_t = (H_t + Lambda)^{-1} q_t`` by chunkwise CG; backward is a second CG solve.

    With ``A_t = H_t + Lambda`` symmetric, ``dL/dq_t = A_t^{-1} dL/dq*_t`` (the same
    SPD solve) and ``dL/dA_t = -dq_t q*_t^T``. The latter is pushed into ``k``, the gates,
    ``Lambda`` and ``H_0`` as the gradient of ``-sum_t dq_t^T A_t q*_t`` (one matvec pass,
    differentiated by autograd), so no CG iteration is ever stored or backpropagated.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: torch.autograd.function.FunctionCtx,
        q: torch.Tensor,
        k: torch.Tensor,
        b: torch.Tensor,
        beta: torch.Tensor,
        Lambda: torch.Tensor,
        H0: torch.Tensor,
        max_iter: int,
        tol: float | None,
    ) -> torch.Tensor:
        M = gate_mask(b, beta)
        H_start, _ = chunk_states(k, k, b, beta, H0)
        q_star = conjugate_gradient(
            lambda X: mesa_matvec(X, k, b, M, H_start, Lambda), q, max_iter=max_iter, tol=tol
        ).x
        ctx.save_for_backward(q_star, k, b, beta, Lambda, H0)
        ctx.cg = (max_iter, tol)
        return q_star

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: torch.autograd.function.FunctionCtx, dq_star: torch.Tensor):  # type: ignore[override]
        q_star, k, b, beta, Lambda, H0 = ctx.saved_tensors
        max_iter, tol = ctx.cg
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_(True) for t in (k, b, beta, Lambda, H0)]
            kk, bb, be, lam, h0 = leaves
            M = gate_mask(bb, be)
            H_start, _ = chunk_states(kk, kk, bb, be, h0)
            with torch.no_grad():
                dq = conjugate_gradient(
                    lambda X: mesa_matvec(X, kk, bb, M, H_start, lam),
                    dq_star,
                    max_iter=max_iter,
                    tol=tol,
                ).x
            Aq = mesa_matvec(q_star, kk, bb, M, H_start, lam)
            needed = [n for n, flag in zip(leaves, ctx.needs_input_grad[1:6], strict=True) if flag]
            grads = iter(torch.autograd.grad(-(dq * Aq).sum(), needed)) if needed else iter(())
            out = [next(grads) if flag else None for flag in ctx.needs_input_grad[1:6]]
        return (dq, *out, None, None)


def _pad_time(x: torch.Tensor, T_pad: int) -> torch.Tensor:
    if T_pad == x.shape[1]:
        return x
    pad = x.new_zeros(x.shape[0], T_pad - x.shape[1], *x.shape[2:])
    return torch.cat([x, pad], dim=1)


def _chunk_forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    Lambda: torch.Tensor,
    initial_state: tuple[torch.Tensor, torch.Tensor] | None,
    chunk_size: int,
    max_cg_steps: int,
    cg_tol: float | None,
    custom_backward: bool,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    B, T, NH, K = q.shape
    V = v.shape[-1]
    dt = compute_dtype(q)
    C = min(chunk_size, T)
    T_pad = -(-T // C) * C
    # padded steps have beta = 0 and gamma = 1 (g = 0): they leave the states untouched
    q_c, k_c, v_c, g_c, beta_c = (
        to_chunks(_pad_time(x.to(dt), T_pad), C) for x in (q, k, v, g, beta)
    )
    b = g_c.cumsum(-1)
    lam = Lambda.to(dt)
    if initial_state is None:
        H0 = q.new_zeros(B, NH, K, K, dtype=dt)
        G0 = q.new_zeros(B, NH, V, K, dtype=dt)
    else:
        H0, G0 = initial_state[0].to(dt), initial_state[1].to(dt)
    if custom_backward:
        q_star = MesaSolve.apply(q_c, k_c, b, beta_c, lam, H0, max_cg_steps, cg_tol)
    else:  # plain autograd through every CG iteration (for the tests and the benchmark)
        M = gate_mask(b, beta_c)
        H_start, _ = chunk_states(k_c, k_c, b, beta_c, H0)
        q_star = conjugate_gradient(
            lambda X: mesa_matvec(X, k_c, b, M, H_start, lam),
            q_c,
            max_iter=max_cg_steps,
            tol=cg_tol,
        ).x
    M = gate_mask(b, beta_c)
    G_start, G_T = chunk_states(k_c, v_c, b, beta_c, G0)
    o = gla_pass(q_star, k_c, v_c, G_start, b, M)
    _, H_T = chunk_states(k_c, k_c, b, beta_c, H0)
    return from_chunks(o)[:, :T].to(v.dtype), (H_T, G_T)


def mesa_chunk(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    Lambda: torch.Tensor,
    initial_state: tuple[torch.Tensor, torch.Tensor] | None = None,
    chunk_size: int = 64,
    max_cg_steps: int = 30,
    cg_tol: float | None = None,
    cu_seqlens: torch.Tensor | None = None,
    custom_backward: bool = True,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """Mesa layer outputs ``o_t = G_t (H_t + Lambda)^{-1} q_t`` in chunkwise-parallel form.

    Args:
        q, k: ``(B, T, H, K)``; L2-normalised by the layer (not required here).
        v: ``(B, T, H, V)``.
        g: ``(B, T, H)`` log forget gate ``log gamma_t <= 0``.
        beta: ``(B, T, H)`` input gate.
        Lambda: ``(H, K)`` positive diagonal of the regulariser.
        initial_state: optional ``(H_0, G_0)``, shapes ``(B, H, K, K)``, ``(B, H, V, K)``.
        chunk_size: chunk length ``C``; a length that ``C`` does not divide is zero-padded
            with ``beta = 0, gamma = 1`` steps, which change neither outputs nor states.
        max_cg_steps: CG iterations, started from ``x_0 = 0`` (fla default 30).
        cg_tol: stop early once every row has ``||r|| <= cg_tol ||q||`` (None: fixed steps).
        cu_seqlens: ``(N + 1,)`` cumulative lengths of ``N`` sequences packed along time
            (then ``B`` must be 1); each sequence starts from its own state.
        custom_backward: backward by a second CG solve (True) or autograd through CG.

    Returns:
        ``o`` ``(B, T, H, V)`` in ``v``'s dtype and the final ``(H_T, G_T)`` in float32/64.
    """
    check_inputs(q, k, v, g, beta, Lambda)
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValueError(f"chunk_size: expected a positive int, got {chunk_size!r}")
    if not isinstance(max_cg_steps, int) or max_cg_steps < 0:
        raise ValueError(f"max_cg_steps: expected a non-negative int, got {max_cg_steps!r}")
    B, T, NH, K = q.shape
    V = v.shape[-1]
    if cu_seqlens is None:
        check_state(initial_state, B, NH, K, V)
        return _chunk_forward(
            q,
            k,
            v,
            g,
            beta,
            Lambda,
            initial_state,
            chunk_size,
            max_cg_steps,
            cg_tol,
            custom_backward,
        )
    offsets = [int(x) for x in cu_seqlens.tolist()]
    if B != 1:
        raise ValueError(f"cu_seqlens: expected batch size 1 for packed sequences, got {B}")
    if offsets[0] != 0 or offsets[-1] != T or any(b <= a for a, b in itertools.pairwise(offsets)):
        raise ValueError(
            f"cu_seqlens: expected strictly increasing offsets from 0 to T={T}, got {offsets}"
        )
    n_seq = len(offsets) - 1
    check_state(initial_state, n_seq, NH, K, V)
    longest = max(b - a for a, b in itertools.pairwise(offsets))

    def unpack(x: torch.Tensor) -> torch.Tensor:
        return torch.cat([_pad_time(x[:, a:b], longest) for a, b in itertools.pairwise(offsets)], 0)

    o, state = _chunk_forward(
        *(unpack(x) for x in (q, k, v, g, beta)),
        Lambda,
        initial_state,
        chunk_size,
        max_cg_steps,
        cg_tol,
        custom_backward,
    )
    o = torch.cat(
        [o[i : i + 1, : b - a] for i, (a, b) in enumerate(itertools.pairwise(offsets))], 1
    )
    return o, state
