"""DIST2Loss, vectorised over any batch shape.

At a position whose label g lies in the metric subset V_d (Chung et al., 2025, Sec. 3):

    p_d(v) = exp(-d(v, g) / tau) / sum_{v' in V_d} exp(-d(v', g) / tau)         (target)
    L      = L_CE + alpha * sum_t KL(p_d || p_theta restricted to V_d)          (loss)

p_d is also the maximiser of E_pi[-d] + tau H(pi) over distributions pi on V_d (the
entropy-regularised RL reading), so the KL term pulls the model towards the best
tau-smoothed policy for the reward -d.

"Restricted" (the default, and what the circulating reference code does) renormalises the
model over V_d: q = softmax(logits[V_d]). Then d KL / d logits[V_d] = q - p_d, zero outside
V_d, and CE alone decides how much mass V_d gets. With ``restrict=False`` q is the full
softmax read at V_d (it sums to <= 1), so the KL also pushes mass into V_d.

Only metric positions are gathered: the cost beyond cross-entropy is one (M, K) block
(M metric positions, K = |V_d|), never (N, V).
"""

from __future__ import annotations

from typing import Any, Literal

import torch
import torch.nn.functional as F

from dist2loss._checks import check_alpha, check_logits_labels, check_tau
from dist2loss.metric import MetricTable

NORMALISATIONS = ("tokens", "metric")


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    # half-precision logits: the (M, K) block is small, so take its softmaxes in float32
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


def dist2_targets(labels: torch.Tensor, metric: MetricTable, tau: float = 1.0) -> torch.Tensor:
    """p_d over V_d for each label: (..., K) float64; rows of non-metric labels are NaN."""
    check_tau(tau)
    if not isinstance(metric, MetricTable):
        raise TypeError(f"metric: expected a MetricTable, got {type(metric).__name__}")
    slot = metric.slot(labels.device)[labels.clamp(0, metric.vocab_size - 1)]
    slot = torch.where((labels >= 0) & (labels < metric.vocab_size), slot, -1)
    d = metric.distance_on(labels.device, torch.float64)[slot.clamp(min=0)]
    p = torch.softmax(-d / tau, dim=-1)
    return torch.where((slot >= 0)[..., None], p, torch.nan)


def _metric_rows(
    logits: torch.Tensor, labels: torch.Tensor, metric: MetricTable, ignore_index: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Flat indices of the metric positions, their label slots in V_d, and the valid mask."""
    valid = labels != ignore_index
    slot_all = metric.slot(logits.device)[torch.where(valid, labels, 0)]
    is_metric = valid & (slot_all >= 0)
    rows = is_metric.reshape(-1).nonzero().squeeze(1)
    return rows, slot_all.reshape(-1)[rows], valid


def dist2_kl(
    logits: torch.Tensor,
    labels: torch.Tensor,
    metric: MetricTable,
    tau: float = 1.0,
    *,
    restrict: bool = True,
    ignore_index: int = -100,
) -> torch.Tensor:
    """KL(p_d || q) at every position, shape ``labels.shape``; 0 where the label is not in V_d.

    Args:
        logits: (..., V) floating.
        labels: (...) int64 token ids (or `ignore_index`).
        metric: the `MetricTable` of V_d (its vocab_size must be V).
        tau: the target's temperature (> 0).
        restrict: renormalise the model over V_d (True) or read the full softmax there.
        ignore_index: label value of positions without a target.
    """
    check_tau(tau)
    if not isinstance(metric, MetricTable):
        raise TypeError(f"metric: expected a MetricTable, got {type(metric).__name__}")
    check_logits_labels(logits, labels, metric.vocab_size, ignore_index)
    kl_rows, rows, _ = _kl_rows(logits, labels, metric, tau, restrict, ignore_index)
    out = torch.zeros(labels.numel(), dtype=kl_rows.dtype, device=logits.device)
    return out.index_put((rows,), kl_rows).reshape(labels.shape)


def _kl_rows(
    logits: torch.Tensor,
    labels: torch.Tensor,
    metric: MetricTable,
    tau: float,
    restrict: bool,
    ignore_index: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rows, g, valid = _metric_rows(logits, labels, metric, ignore_index)
    dtype = _compute_dtype(logits.dtype)
    flat = logits.reshape(-1, logits.shape[-1])
    ids = metric.ids_on(logits.device)
    # columns first: a (N, K) gather, never an (M, V) copy of whole rows
    z = flat.index_select(1, ids).index_select(0, rows).to(dtype)  # (M, K)
    if restrict:
        logq = torch.log_softmax(z, dim=-1)
    else:
        logq = z - torch.logsumexp(flat.index_select(0, rows).to(dtype), dim=-1, keepdim=True)
    logp = torch.log_softmax(-metric.distance_on(logits.device, dtype).index_select(0, g) / tau, -1)
    p = logp.exp()
    # 0 * log 0 = 0: a target that underflows to zero (tau -> 0) contributes nothing
    kl = torch.where(p > 0, p * (logp - logq), torch.zeros((), dtype=dtype, device=p.device))
    return kl.sum(-1), rows, valid


def dist2_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    metric: MetricTable,
    tau: float = 1.0,
    alpha: float = 0.1,
    *,
    restrict: bool = True,
    weights: torch.Tensor | None = None,
    normalise: Literal["tokens", "metric"] = "tokens",
    ignore_index: int = -100,
    check_finite: bool = True,
    return_parts: bool = False,
) -> Any:
    """DIST2Loss: cross-entropy plus alpha times the KL to the distance-aware target.

    ``L = CE + alpha * sum_{t metric} w_t KL(p_d,t || q_t) / n``, with CE exactly
    ``F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), ignore_index=...)`` (so
    ``alpha=0`` is plain CE bit for bit) and ``n`` the number of non-ignored positions
    (``normalise="tokens"``: a per-token average of CE_t + alpha KL_t) or of metric positions
    (``normalise="metric"``, what the reference code does).

    Args:
        logits: (..., V) floating; any batch shape.
        labels: (...) int64 next-token labels aligned with `logits` (shift them yourself for a
            causal LM, or use `causal_dist2_loss`); `ignore_index` marks positions without one.
        metric: `MetricTable` of V_d; its vocab_size must equal V.
        tau: target temperature (> 0). Paper default for numbers: 1 (the reference code: 4 or 2).
        alpha: KL weight (>= 0). Paper default: 0.1 (the reference code: 1.0).
        restrict: renormalise the model's probabilities over V_d (paper and reference code).
        weights: optional (...) non-negative per-position KL weights, e.g.
            ``place_values(labels, metric) + 1`` for the reference's place-value weighting.
        normalise: "tokens" or "metric" (see above).
        ignore_index: label of positions without a target.
        check_finite: raise a ValueError when the loss is not finite (one host sync).
        return_parts: also return ``{"ce": float, "dist2": float}`` (the unweighted KL term).

    Returns:
        The scalar loss (dtype of the cross-entropy), or ``(loss, parts)``.

    Float32/float64 logits that require grad, with ``restrict=True``, no `weights` and no
    `return_parts`, take a fused backward (`_FusedDist2`: one (N, V) gradient, like CE alone);
    every other call goes through autograd. Both give the same values and gradients (tested).
    """
    check_tau(tau)
    check_alpha(alpha)
    if not isinstance(metric, MetricTable):
        raise TypeError(f"metric: expected a MetricTable, got {type(metric).__name__}")
    check_logits_labels(logits, labels, metric.vocab_size, ignore_index)
    if normalise not in NORMALISATIONS:
        raise ValueError(f"normalise: expected one of {NORMALISATIONS}, got {normalise!r}")
    if weights is not None:
        if not isinstance(weights, torch.Tensor) or weights.shape != labels.shape:
            raise ValueError(
                f"weights: expected a tensor of the labels' shape {tuple(labels.shape)}, got "
                f"{tuple(getattr(weights, 'shape', ())) or type(weights).__name__}"
            )
        if not torch.isfinite(weights).all() or bool((weights < 0).any()):
            raise ValueError("weights: expected finite, non-negative per-position weights")
    vocab = logits.shape[-1]
    fused = (
        alpha > 0 and restrict and not return_parts and weights is None
        and logits.dtype in (torch.float32, torch.float64) and logits.requires_grad
    )  # fmt: skip
    kl_term = None
    if fused:
        loss = _fused_loss(logits, labels, metric, tau, alpha, normalise, ignore_index)
    else:
        ce = F.cross_entropy(
            logits.reshape(-1, vocab), labels.reshape(-1), ignore_index=ignore_index
        )
        loss = ce
        if alpha != 0 or return_parts:
            kl_rows, rows, valid = _kl_rows(logits, labels, metric, tau, restrict, ignore_index)
            if weights is not None:
                kl_rows = kl_rows * weights.reshape(-1).index_select(0, rows).to(kl_rows.dtype)
            count = valid.sum() if normalise == "tokens" else rows.new_tensor(rows.numel())
            kl_term = kl_rows.sum() / count.clamp(min=1)
            loss = ce if alpha == 0 else ce + (alpha * kl_term).to(ce.dtype)
    if check_finite and not bool(torch.isfinite(loss.detach())):
        raise ValueError(
            f"logits: the loss is {float(loss)}; logits hold NaN or inf (or every position is "
            f"ignored: labels are all ignore_index={ignore_index})"
        )
    if return_parts:
        assert kl_term is not None
        return loss, {"ce": float(ce.detach()), "dist2": float(kl_term.detach())}
    return loss


class _FusedDist2(torch.autograd.Function):
    """CE + alpha KL (restricted) with ONE (N, V) gradient, written in place.

    Through autograd the KL's gather would get its own (N, V) gradient, then be added to
    CE's: twice the memory traffic of CE alone. Here the backward forms CE's gradient
    softmax(z) - onehot(y) once and adds alpha (q - p_d) / n_kl into its V_d columns at the
    metric rows (the closed form checked by the tests).
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        flat: torch.Tensor,  # (N, V)
        y: torch.Tensor,  # (N,) labels, ignored ones replaced by 0
        valid: torch.Tensor,  # (N,) bool
        rows: torch.Tensor,  # (M,) metric rows
        ids: torch.Tensor,  # (K,) V_d ids
        p: torch.Tensor,  # (M, K) targets
        logp: torch.Tensor,  # (M, K) log targets
        alpha: float,
        n_ce: torch.Tensor,  # () count of valid positions
        n_kl: torch.Tensor,  # () KL normaliser
    ) -> torch.Tensor:
        lse = torch.logsumexp(flat, dim=-1)  # (N,)
        ce_t = (lse - flat.gather(1, y[:, None]).squeeze(1)) * valid
        logq = torch.log_softmax(flat.index_select(1, ids).index_select(0, rows), dim=-1)
        kl = torch.where(p > 0, p * (logp - logq), torch.zeros((), dtype=p.dtype)).sum()
        ctx.save_for_backward(flat, lse, y, valid, rows, ids, p, logq, n_ce, n_kl)
        ctx.alpha = alpha
        return ce_t.sum() / n_ce + alpha * kl / n_kl

    @staticmethod
    def backward(ctx: Any, go: torch.Tensor) -> Any:  # type: ignore[override]
        flat, lse, y, valid, rows, ids, p, logq, n_ce, n_kl = ctx.saved_tensors
        scale = go / n_ce
        grad = torch.exp(flat - lse[:, None])
        grad[torch.arange(grad.shape[0], device=grad.device), y] -= 1.0
        grad.mul_((valid * scale)[:, None])
        block = (ctx.alpha * go / n_kl) * (logq.exp() - p)  # (M, K)
        grad[rows[:, None], ids[None, :]] += block
        return grad, None, None, None, None, None, None, None, None, None


def _fused_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    metric: MetricTable,
    tau: float,
    alpha: float,
    normalise: str,
    ignore_index: int,
) -> torch.Tensor:
    flat = logits.reshape(-1, logits.shape[-1])
    rows, g, valid_nd = _metric_rows(logits, labels, metric, ignore_index)
    valid = valid_nd.reshape(-1)
    y = torch.where(valid, labels.reshape(-1), 0)
    d = metric.distance_on(logits.device, logits.dtype).index_select(0, g)
    logp = torch.log_softmax(-d / tau, dim=-1)
    n_ce = valid.sum().to(logits.dtype)
    n_kl = (
        n_ce.clamp(min=1)
        if normalise == "tokens"
        else torch.tensor(float(max(rows.numel(), 1)), dtype=logits.dtype, device=logits.device)
    )
    out: torch.Tensor = _FusedDist2.apply(
        flat, y, valid, rows, metric.ids_on(logits.device), logp.exp(), logp, alpha, n_ce, n_kl
    )
    return out


def causal_dist2_loss(
    logits: torch.Tensor, labels: torch.Tensor, metric: MetricTable, **kwargs: Any
) -> Any:
    """`dist2_loss` for a causal LM's (batch, time, V) logits and unshifted (batch, time) labels
    (the Hugging Face convention: position t predicts labels[t + 1])."""
    if not isinstance(logits, torch.Tensor) or logits.ndim < 2:
        raise ValueError(
            f"logits: expected (..., time, vocab), got {tuple(getattr(logits, 'shape', ()))}"
        )
    return dist2_loss(logits[..., :-1, :], labels[..., 1:], metric, **kwargs)


def place_values(labels: torch.Tensor, metric: MetricTable) -> torch.Tensor:
    """For a number written as several metric tokens, each token's place from the right.

    (...) int64 like `labels`: 0 for the last token of a run of consecutive metric labels
    along the last axis, 1 for the one before it, ...; -1 where the label is not in V_d.
    A multi-token number's KL terms are then per place value; the circulating reference
    weights them by ``place + 1`` (pass that as `weights`).
    """
    if not isinstance(labels, torch.Tensor) or labels.dtype != torch.int64 or labels.ndim < 1:
        raise TypeError("labels: expected an int64 tensor with a time axis (..., time)")
    inside = (labels >= 0) & (labels < metric.vocab_size)
    slot = metric.slot(labels.device)[torch.where(inside, labels, 0)]
    m = (inside & (slot >= 0)).flip(-1).to(torch.int64)
    c = m.cumsum(-1)
    # the count reached at the last non-metric position before t (from the right) resets the run
    base = torch.where(m == 0, c, torch.zeros_like(c)).cummax(-1).values
    run = (c - base).flip(-1)
    return torch.where(m.flip(-1) > 0, run - 1, torch.full_like(run, -1))
