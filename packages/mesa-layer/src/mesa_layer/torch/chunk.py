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

Per forward, ``M``, ``exp(b)`` and the chunk-start states of ``H`` and ``G`` (one pass over
the chunks with values ``[K, V]``) are computed once and shared by the CG solve and the
read-out; the CG matvec then costs three small matmuls and two fused multiply-adds.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import torch

from mesa_layer.torch._checks import check_cg, check_inputs, check_state, compute_dtype
from mesa_layer.torch.cg import conjugate_gradient
from mesa_layer.torch.fla_path import mesa_chunk_fla, resolve_backend

CG_STARTS = ("zero", "q")


def to_chunks(x: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """``(B, T, H, ...)`` with ``T = N * C`` -> ``(B, H, N, C, ...)`` (contiguous)."""
    B, T, H = x.shape[:3]
    x = x.reshape(B, T // chunk_size, chunk_size, H, *x.shape[3:])
    return x.movedim(3, 1).contiguous()


def from_chunks(x: torch.Tensor) -> torch.Tensor:
    """``(B, H, N, C, ...)`` -> ``(B, N*C, H, ...)``."""
    B, H, N, C = x.shape[:4]
    return x.movedim(1, 3).reshape(B, N * C, H, *x.shape[4:])


def gate_mask(b: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """``M_ij = exp(b_i - b_j) beta_j 1[i >= j]``, shape ``(B, H, N, C, C)``."""
    C = b.shape[-1]
    above = torch.ones(C, C, dtype=torch.bool, device=b.device).triu(1)
    # mask before exp: above the diagonal b_i - b_j > 0 could overflow
    diff = (b[..., :, None] - b[..., None, :]).masked_fill(above, -torch.inf)
    return diff.exp() * beta[..., None, :]


def chunk_states(
    k: torch.Tensor, val: torch.Tensor, b: torch.Tensor, beta: torch.Tensor, S0: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """States before every chunk, ``(B, H, N, Dv, K)``, and the final state ``(B, H, Dv, K)``.

    ``S`` is ``H`` for ``val = k`` and ``G`` for ``val = v`` (both stored as ``val x key``);
    ``val = [k, v]`` (concatenated on the last axis) gives both in one pass.
    """
    decay_last = b[..., -1]  # (B, H, N)
    w = (decay_last[..., None] - b).exp() * beta  # exp(b_C - b_j) beta_j
    increments = (val * w[..., None]).transpose(-1, -2) @ k  # (B, H, N, Dv, K)
    gamma = decay_last.exp()[..., None, None]
    starts = []
    S = S0
    for n in range(k.shape[2]):
        starts.append(S)
        S = torch.addcmul(increments[:, :, n], gamma[:, :, n], S)
    return torch.stack(starts, dim=2), S


def gla_pass(
    X: torch.Tensor,
    k: torch.Tensor,
    val: torch.Tensor,
    S_start: torch.Tensor,
    eb: torch.Tensor,
    M: torch.Tensor,
) -> torch.Tensor:
    """``exp(b) * (X S_[n]^T) + ((X K^T) * M) val``: one gated linear-attention pass per chunk.

    `eb` is ``exp(b)`` ``(B, H, N, C)``.
    """
    intra = ((X @ k.transpose(-1, -2)) * M) @ val
    return torch.addcmul(intra, eb[..., None], X @ S_start.transpose(-1, -2))


def mesa_matvec(
    X: torch.Tensor,
    k: torch.Tensor,
    eb: torch.Tensor,
    M: torch.Tensor,
    H_start: torch.Tensor,
    Lambda: torch.Tensor,
) -> torch.Tensor:
    """``(H_t + Lambda) x_t`` for every token of every chunk at once (autograd-friendly)."""
    return gla_pass(X, k, k, H_start, eb, M) + X * Lambda[None, :, None, None, :]


def _fused_matvec(
    k: torch.Tensor, eb: torch.Tensor, M: torch.Tensor, H_start: torch.Tensor, Lambda: torch.Tensor
) -> Any:
    """`mesa_matvec` for the no-grad CG loop: transposes and broadcasts hoisted out of the
    loop, the two additions fused into in-place multiply-adds."""
    kT = k.transpose(-1, -2)
    HT = H_start.transpose(-1, -2)
    eb_col = eb[..., None]
    lam = Lambda[None, :, None, None, :]

    def matvec(X: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(X, kT).mul_(M)
        out = torch.matmul(scores, k)
        out.addcmul_(torch.matmul(X, HT), eb_col)
        return out.addcmul_(X, lam)

    return matvec


class MesaSolve(torch.autograd.Function):
    """``q*_t = (H_t + Lambda)^{-1} q_t`` by chunkwise CG; backward is a second CG solve.

    With ``A_t = H_t + Lambda`` symmetric, ``dL/dq_t = A_t^{-1} dL/dq*_t`` (the same SPD
    solve, ``u``) and ``dL/dA_t = -u_t q*_t^T``. The latter is pushed into the inputs of
    the matvec ``A X = exp(b) * (X H_[n]^T) + ((X K^T) * M) K + X * Lambda`` in closed form
    (``S = Q* K^T``, ``U = u K^T``):

        dH_[n] = -(exp(b) u)^T Q*,    d exp(b)_t = -u_t . (H_[n] q*_t),
        dM = -S * U,                  dK = -((M * U)^T Q* + (M * S)^T u),
        dLambda = -sum_t u_t * q*_t,

    and autograd carries them on through ``M``, ``exp(b)`` and ``H_[n]`` to the gates, keys
    and ``H_0``. No CG iteration is ever stored or backpropagated. `q_start` starts the
    forward CG at ``x_0 = q`` instead of 0; the backward solve starts from 0 either way.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        q: torch.Tensor,
        k: torch.Tensor,
        eb: torch.Tensor,
        M: torch.Tensor,
        H_start: torch.Tensor,
        Lambda: torch.Tensor,
        max_iter: int,
        tol: float | None,
        q_start: bool,
    ) -> torch.Tensor:
        matvec = _fused_matvec(k, eb, M, H_start, Lambda)
        x0 = q if q_start else None
        q_star = conjugate_gradient(matvec, q, x0=x0, max_iter=max_iter, tol=tol).x
        ctx.save_for_backward(q_star, k, eb, M, H_start, Lambda)
        ctx.cg = (max_iter, tol)
        return q_star

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, dq_star: torch.Tensor) -> tuple[torch.Tensor | None, ...]:  # type: ignore[override]
        y, k, eb, M, H_start, Lambda = ctx.saved_tensors
        max_iter, tol = ctx.cg
        need_k, need_eb, need_M, need_H, need_lam = ctx.needs_input_grad[1:6]
        u = conjugate_gradient(
            _fused_matvec(k, eb, M, H_start, Lambda),
            dq_star.contiguous(),
            max_iter=max_iter,
            tol=tol,
        ).x
        dk = deb = dM = dH = dlam = None
        if need_k or need_M:
            kT = k.transpose(-1, -2)
            S, U = y @ kT, u @ kT
            if need_M:
                dM = -(S * U)
            if need_k:
                dk = -((M * U).transpose(-1, -2) @ y + (M * S).transpose(-1, -2) @ u)
        if need_eb:
            deb = -torch.linalg.vecdot(u, y @ H_start.transpose(-1, -2))
        if need_H:
            dH = -((u * eb[..., None]).transpose(-1, -2) @ y)
        if need_lam:
            dlam = -(u * y).sum(dim=(0, 2, 3))
        return (u, dk, deb, dM, dH, dlam, None, None, None)


def _pad_time(x: torch.Tensor, T_pad: int) -> torch.Tensor:
    if T_pad == x.shape[1]:
        return x
    pad = x.new_zeros(x.shape[0], T_pad - x.shape[1], *x.shape[2:])
    return torch.cat([x, pad], dim=1)


def _chunk_forward(
    inputs: tuple[torch.Tensor, ...],
    Lambda: torch.Tensor,
    initial_state: tuple[torch.Tensor, torch.Tensor] | None,
    chunk_size: int,
    max_cg_steps: int,
    cg_tol: float | None,
    custom_backward: bool,
    q_start: bool,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    q, k, v, g, beta = inputs  # (B, T, H, K) twice, (B, T, H, V), (B, T, H) twice
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
    eb = b.exp()
    lam = Lambda.to(dt)
    if initial_state is None:
        S0 = q.new_zeros(B, NH, K + V, K, dtype=dt)
    else:
        S0 = torch.cat([initial_state[0].to(dt), initial_state[1].to(dt)], dim=-2)
    M = gate_mask(b, beta_c)
    # H (values k) and G (values v) in one pass over the chunks
    starts, final = chunk_states(k_c, torch.cat([k_c, v_c], -1), b, beta_c, S0)
    H_start, G_start = starts[..., :K, :], starts[..., K:, :]
    if custom_backward:
        q_star = MesaSolve.apply(q_c, k_c, eb, M, H_start, lam, max_cg_steps, cg_tol, q_start)
    else:  # plain autograd through every CG iteration (for the tests and the benchmark)
        q_star = conjugate_gradient(
            lambda X: mesa_matvec(X, k_c, eb, M, H_start, lam),
            q_c,
            x0=q_c if q_start else None,
            max_iter=max_cg_steps,
            tol=cg_tol,
        ).x
    o = gla_pass(q_star, k_c, v_c, G_start, eb, M)
    return from_chunks(o)[:, :T].to(v.dtype), (final[..., :K, :], final[..., K:, :])


def mesa_chunk(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    Lambda: torch.Tensor,
    initial_state: tuple[torch.Tensor, torch.Tensor] | None = None,
    chunk_size: int = 32,
    max_cg_steps: int = 30,
    cg_tol: float | None = None,
    cu_seqlens: torch.Tensor | None = None,
    custom_backward: bool = True,
    cg_start: str = "zero",
    backend: str | None = None,
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
            The result does not depend on ``C`` (up to rounding); the cost does: one CG
            step costs ``(2C + K) K`` multiply-adds per token (``X K^T``, ``(.) K`` and
            ``X H_[n]^T``), so 32 (default) does 1.6x less work than fla's 64 at K = 32.
        max_cg_steps: CG iterations (fla default 30).
        cg_tol: stop early once every row has ``||r|| <= cg_tol ||q||`` (None: fixed steps).
        cu_seqlens: ``(N + 1,)`` cumulative lengths of ``N`` sequences packed along time
            (then ``B`` must be 1); each sequence starts from its own state.
        custom_backward: backward by a second CG solve (True) or autograd through CG.
        cg_start: ``"zero"`` starts CG at ``x_0 = 0`` (fla's choice: 0 steps give ``o = 0``);
            ``"q"`` at ``x_0 = q`` (the paper's k = 0 limit ``q* = q``: 0 steps give the
            GLA read-out ``o_t = G_t q_t``).
        backend: ``"auto"`` (fla's Triton kernels for CUDA tensors when the ``fla`` extra is
            installed and the call is supported, else ours), ``"torch"`` or ``"fla"``;
            None reads ``$MESA_LAYER_BACKEND`` (default ``"auto"``). See
            `mesa_layer.torch.fla_path` for the mapping and what fla does not support
            (``d_v != d_k``, ``d_k > 128``, float64, `cg_tol`, ``cg_start="q"``); fla's
            chunk length is always 64, whatever `chunk_size`.

    Returns:
        ``o`` ``(B, T, H, V)`` in ``v``'s dtype and the final ``(H_T, G_T)`` in float32/64.
    """
    check_inputs(q, k, v, g, beta, Lambda)
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValueError(f"chunk_size: expected a positive int, got {chunk_size!r}")
    check_cg(max_cg_steps, cg_tol)
    if cg_start not in CG_STARTS:
        raise ValueError(f"cg_start: expected one of {CG_STARTS}, got {cg_start!r}")
    path = resolve_backend(backend, q, v, cg_tol, custom_backward, cg_start)
    q_start = cg_start == "q"
    B, T, NH, K = q.shape
    V = v.shape[-1]

    def forward(
        rows: Callable[[torch.Tensor], torch.Tensor],
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """`_chunk_forward` on ``rows(x)`` of each of q, k, v, g, beta (the same options)."""
        return _chunk_forward(
            tuple(rows(x) for x in (q, k, v, g, beta)), Lambda, initial_state,
            chunk_size, max_cg_steps, cg_tol, custom_backward, q_start,
        )  # fmt: skip

    if cu_seqlens is None:
        check_state(initial_state, B, NH, K, V)
        if path == "fla":
            return mesa_chunk_fla(q, k, v, g, beta, Lambda, initial_state, max_cg_steps, None)
        return forward(lambda x: x)
    if (
        not isinstance(cu_seqlens, torch.Tensor)
        or cu_seqlens.ndim != 1
        or cu_seqlens.is_floating_point()
    ):
        raise TypeError(
            f"cu_seqlens: expected a 1-D integer tensor of offsets, got {cu_seqlens!r:.80}"
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
    if path == "fla":
        return mesa_chunk_fla(q, k, v, g, beta, Lambda, initial_state, max_cg_steps, cu_seqlens)
    longest = max(b - a for a, b in itertools.pairwise(offsets))

    def unpack(x: torch.Tensor) -> torch.Tensor:
        return torch.cat([_pad_time(x[:, a:b], longest) for a, b in itertools.pairwise(offsets)], 0)

    o, state = forward(unpack)
    o = torch.cat(
        [o[i : i + 1, : b - a] for i, (a, b) in enumerate(itertools.pairwise(offsets))], 1
    )
    return o, state
