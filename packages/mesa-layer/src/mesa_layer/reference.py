"""Slow, obviously-correct Mesa layer: a per-step recurrence with an exact ``linalg.solve``.

This is the oracle of the tests (the counterpart of fla's ``naive_mesa_net_exact``). Shapes
follow the public API: ``(batch, time, heads, dim)``.

Per head and time step t (MesaNet, Sec. 3, the "Mesa rule", Eq. 5):

    H_t = gamma_t H_{t-1} + beta_t k_t k_t^T          (d_k x d_k)
    G_t = gamma_t G_{t-1} + beta_t v_t k_t^T          (d_v x d_k)
    o_t = G_t (H_t + Lambda)^{-1} q_t

with ``gamma_t = exp(g_t)`` (``g`` is the log forget gate) and ``Lambda = diag(lambda)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def mesa_exact(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    Lambda: torch.Tensor,
    initial_state: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """Mesa outputs by the exact per-step solve (Eq. 5).

    Args:
        q, k: ``(B, T, H, K)`` queries and keys (L2-normalised by the layer).
        v: ``(B, T, H, V)`` values.
        g: ``(B, T, H)`` log forget gate, ``g = log gamma <= 0``.
        beta: ``(B, T, H)`` input gate in (0, 1).
        Lambda: ``(H, K)`` positive diagonal regulariser.
        initial_state: optional ``(H_0, G_0)`` of shapes ``(B, H, K, K)`` and ``(B, H, V, K)``.

    Returns:
        ``o`` of shape ``(B, T, H, V)`` and the final state ``(H_T, G_T)``.
    """
    import torch

    from mesa_layer.torch._checks import check_inputs, check_state

    check_inputs(q, k, v, g, beta, Lambda)
    check_state(initial_state, q.shape[0], q.shape[2], q.shape[3], v.shape[-1])
    B, T, NH, K = q.shape
    V = v.shape[-1]
    if initial_state is None:
        Hs = q.new_zeros(B, NH, K, K)
        Gs = q.new_zeros(B, NH, V, K)
    else:
        Hs, Gs = initial_state[0].clone(), initial_state[1].clone()
    eye = torch.diag_embed(Lambda)  # (H, K, K)
    outs = []
    for t in range(T):
        gamma = g[:, t].exp()[..., None, None]  # (B, H, 1, 1)
        b = beta[:, t][..., None, None]
        kt, vt, qt = k[:, t], v[:, t], q[:, t]
        Hs = gamma * Hs + b * kt[..., :, None] * kt[..., None, :]
        Gs = gamma * Gs + b * vt[..., :, None] * kt[..., None, :]
        q_star = torch.linalg.solve(Hs + eye, qt[..., None])  # (B, H, K, 1)
        outs.append((Gs @ q_star)[..., 0])
    return torch.stack(outs, dim=1), (Hs, Gs)


def gated_linear_attention_exact(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    initial_state: torch.Tensor | None = None,
) -> torch.Tensor:
    """Scalar-gated linear attention ``o_t = G_t q_t`` with the Mesa ``G`` recurrence.

    This is the Mesa layer with the solve removed: ``lambda * o_t -> G_t q_t`` as
    ``Lambda = lambda I -> infinity`` (the limit case of the tests).
    """
    import torch

    B, T, NH, K = q.shape
    V = v.shape[-1]
    Gs = q.new_zeros(B, NH, V, K) if initial_state is None else initial_state.clone()
    outs = []
    for t in range(T):
        gamma = g[:, t].exp()[..., None, None]
        b = beta[:, t][..., None, None]
        Gs = gamma * Gs + b * v[:, t][..., :, None] * k[:, t][..., None, :]
        outs.append((Gs @ q[:, t][..., None])[..., 0])
    return torch.stack(outs, dim=1)


def delta_rule_exact(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor
) -> torch.Tensor:
    """DeltaNet: ``Phi_t = Phi_{t-1}(I - beta_t k_t k_t^T) + beta_t v_t k_t^T``, ``o_t = Phi_t q_t``."""
    import torch

    B, T, NH, K = q.shape
    V = v.shape[-1]
    Phi = q.new_zeros(B, NH, V, K)
    outs = []
    for t in range(T):
        kt, vt = k[:, t], v[:, t]
        b = beta[:, t][..., None]
        u = b * (vt - (Phi @ kt[..., None])[..., 0])  # (B, H, V)
        Phi = Phi + u[..., :, None] * kt[..., None, :]
        outs.append((Phi @ q[:, t][..., None])[..., 0])
    return torch.stack(outs, dim=1)
