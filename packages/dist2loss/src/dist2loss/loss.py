"""DIST2Loss, vectorised over any batch shape.

At a position whose label g lies in the metric subset V_d (Chung et al., 2025, Sec. 3):

    p_d(v) = exp(-d(v, g) / tau) / sum_{v' in V_d} exp(-d(v', g) / tau)         (target)
    L_dist = sum_t sum_{v in V_d} p_d(v) log(p_d(v) / p_theta(v | s_<t))
    L      = L_CE + alpha * L_dist                                              (loss)

p_d is also the maximiser of E_pi[-d] + tau H(pi) over distributions pi on V_d (the
entropy-regularised RL reading), so the KL term pulls the model towards the best
tau-smoothed policy for the reward -d.

The default KL is the paper note's form (Key design 2): p_theta is the model's
FULL-vocabulary softmax read at V_d (``restrict=False``), so d KL / d logits =
softmax(logits) - p_d (p_d zero outside V_d): the term also pushes mass into V_d.
``restrict=True`` (the circulating third-party reference code) renormalises the model over
V_d, q = softmax(logits[V_d]); then the gradient is q - p_d on V_d, zero outside it, and CE
alone decides how much mass V_d gets.

Two ablation/augmentation options, both off by default (the paper's Sec. 3 loss):

- ``target="uniform"``: the paper's "- distance-aware target" ablation, uniform smoothing
  instead of p_d. Our form keeps p_d's mass on the gold, p_u(g) = p_d(g | g), and spreads
  the rest uniformly over V_d minus {g}, so only the distance shape is removed.
- ``negatives=k``: the contrastive target augmentation with "neighbor negatives" (paper
  appendix; the form is not published, this one is ours): at a metric position with gold g,
  ``beta * -log softmax(logits[{g} + N_k(g)])[g]`` with N_k(g) the k members of V_d nearest
  to g under d (ties by table order). DIST2's KL teaches that near misses are acceptable;
  this InfoNCE term with the near misses as the only negatives keeps the gold sharply above
  them, so the exact token is still preferred where p_d is flat.

Only metric positions are gathered: the cost beyond cross-entropy is one (M, K) block
(M metric positions, K = |V_d|), never (N, V).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
import torch.nn.functional as F

from dist2loss._checks import check_alpha, check_logits_labels, check_tau
from dist2loss.metric import MetricTable

NORMALISATIONS = ("tokens", "metric")
TARGETS = ("distance", "uniform")


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    # half-precision logits: the (M, K) block is small, so take its softmaxes in float32
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


def dist2_targets(
    labels: torch.Tensor, metric: MetricTable, tau: float = 1.0, target: str = "distance"
) -> torch.Tensor:
    """The target over V_d for each label: (..., K) float64; rows of non-metric labels are NaN.

    ``target="distance"``: p_d; ``"uniform"``: p_d's mass on the gold, the rest uniform.
    """
    check_tau(tau)
    if not isinstance(metric, MetricTable):
        raise TypeError(f"metric: expected a MetricTable, got {type(metric).__name__}")
    check_target(target)
    slot = metric.slot(labels.device)[labels.clamp(0, metric.vocab_size - 1)]
    slot = torch.where((labels >= 0) & (labels < metric.vocab_size), slot, -1)
    logp = _log_targets(metric, slot.clamp(min=0).reshape(-1), tau, target, torch.float64)
    p = logp.exp().reshape(*labels.shape, metric.size)
    return torch.where((slot >= 0)[..., None], p, torch.nan)


def check_target(target: Any) -> None:
    if target not in TARGETS:
        raise ValueError(f"target: expected one of {TARGETS}, got {target!r}")


def _log_targets(
    metric: MetricTable, g: torch.Tensor, tau: float, target: str, dtype: torch.dtype
) -> torch.Tensor:
    """(M, K) log-targets for gold slots g (M,): log p_d, or its uniform-smoothing ablation."""
    d = metric.distance_on(g.device, dtype).index_select(0, g)
    logp = torch.log_softmax(-d / tau, dim=-1)
    if target == "distance":
        return logp
    k = metric.size
    gold = logp.gather(1, g[:, None])  # log p_d(g | g)
    rest = torch.log1p(-gold.exp()) - math.log(k - 1)  # (1 - p_d(g | g)) / (K - 1)
    is_gold = torch.arange(k, device=g.device)[None, :] == g[:, None]
    return torch.where(is_gold, gold, rest)


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
    restrict: bool = False,
    target: str = "distance",
    ignore_index: int = -100,
) -> torch.Tensor:
    """KL(p_d || p_theta) at every position, shape ``labels.shape``; 0 where the label is not in V_d.

    Args:
        logits: (..., V) floating.
        labels: (...) int64 token ids (or `ignore_index`).
        metric: the `MetricTable` of V_d (its vocab_size must be V).
        tau: the target's temperature (> 0).
        restrict: read the model's full softmax at V_d (False, the paper's form) or
            renormalise it over V_d (True, the third-party reference code's form).
        target: "distance" (p_d) or "uniform" (the paper's uniform-smoothing ablation).
        ignore_index: label value of positions without a target.
    """
    check_tau(tau)
    if not isinstance(metric, MetricTable):
        raise TypeError(f"metric: expected a MetricTable, got {type(metric).__name__}")
    check_target(target)
    check_logits_labels(logits, labels, metric.vocab_size, ignore_index)
    rows, g, _ = _metric_rows(logits, labels, metric, ignore_index)
    kl_rows = _kl_rows(logits, rows, g, metric, tau, restrict, target)
    out = torch.zeros(labels.numel(), dtype=kl_rows.dtype, device=logits.device)
    return out.index_put((rows,), kl_rows).reshape(labels.shape)


def _kl_rows(
    logits: torch.Tensor,
    rows: torch.Tensor,
    g: torch.Tensor,
    metric: MetricTable,
    tau: float,
    restrict: bool,
    target: str,
) -> torch.Tensor:
    """(M,) KL at the metric rows `rows` (flat indices) with gold slots `g`."""
    dtype = _compute_dtype(logits.dtype)
    flat = logits.reshape(-1, logits.shape[-1])
    ids = metric.ids_on(logits.device)
    # columns first: a (N, K) gather, never an (M, V) copy of whole rows
    z = flat.index_select(1, ids).index_select(0, rows).to(dtype)  # (M, K)
    if restrict:
        logq = torch.log_softmax(z, dim=-1)
    else:
        logq = z - torch.logsumexp(flat.index_select(0, rows).to(dtype), dim=-1, keepdim=True)
    logp = _log_targets(metric, g, tau, target, dtype)
    p = logp.exp()
    # 0 * log 0 = 0: a target that underflows to zero (tau -> 0) contributes nothing
    kl = torch.where(p > 0, p * (logp - logq), torch.zeros((), dtype=dtype, device=p.device))
    return kl.sum(-1)


def neighbor_negative_nll(
    logits: torch.Tensor,
    labels: torch.Tensor,
    metric: MetricTable,
    negatives: int,
    *,
    ignore_index: int = -100,
) -> torch.Tensor:
    """The contrastive neighbor-negative term at every position, shape ``labels.shape``.

    ``-log softmax(logits[{g} + N_k(g)])[g]`` at positions whose label g is in V_d, with
    N_k(g) the `negatives` = k members of V_d nearest to g (`MetricTable.neighbors`); 0
    elsewhere. Our design of the paper's appendix "contrastive target augmentation" (no
    published form): an InfoNCE loss whose only negatives are the near misses.
    """
    if not isinstance(metric, MetricTable):
        raise TypeError(f"metric: expected a MetricTable, got {type(metric).__name__}")
    check_negatives(negatives, metric)
    check_logits_labels(logits, labels, metric.vocab_size, ignore_index)
    rows, g, _ = _metric_rows(logits, labels, metric, ignore_index)
    nll = _neighbor_rows(logits, rows, g, metric, negatives)
    out = torch.zeros(labels.numel(), dtype=nll.dtype, device=logits.device)
    return out.index_put((rows,), nll).reshape(labels.shape)


def check_negatives(negatives: Any, metric: MetricTable) -> None:
    if isinstance(negatives, bool) or not isinstance(negatives, int) or negatives < 0:
        raise ValueError(f"negatives: expected an int >= 0 (neighbors per gold), got {negatives!r}")
    if negatives >= metric.size:
        raise ValueError(
            f"negatives: expected fewer than |V_d| = {metric.size} neighbors, got {negatives}"
        )


def _neighbor_rows(
    logits: torch.Tensor, rows: torch.Tensor, g: torch.Tensor, metric: MetricTable, k: int
) -> torch.Tensor:
    """(M,) -log softmax over {g} + N_k(g) at g; column 0 of `neighbors` is g itself."""
    cols = metric.ids_on(logits.device)[metric.neighbors(k, logits.device).index_select(0, g)]
    z = logits.reshape(-1, logits.shape[-1]).index_select(0, rows)
    z = z.gather(1, cols).to(_compute_dtype(logits.dtype))  # (M, k + 1)
    return torch.logsumexp(z, dim=-1) - z[:, 0]


def _count(name: str, value: Any) -> torch.Tensor | float:
    """A positive item count given from outside (Trainer's ``num_items_in_batch``)."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"{name}: expected a scalar count, got shape {tuple(value.shape)}")
        return value.reshape(())
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name}: expected a positive count (int or scalar tensor), got {value!r}")
    return float(value)


def dist2_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    metric: MetricTable,
    tau: float = 1.0,
    alpha: float = 0.1,
    *,
    restrict: bool = False,
    target: str = "distance",
    negatives: int = 0,
    beta: float = 0.1,
    weights: torch.Tensor | None = None,
    normalise: Literal["tokens", "metric"] = "tokens",
    num_items_in_batch: torch.Tensor | int | None = None,
    num_metric_in_batch: torch.Tensor | int | None = None,
    ignore_index: int = -100,
    check_finite: bool = True,
    return_parts: bool = False,
) -> Any:
    """DIST2Loss: cross-entropy plus alpha times the KL to the distance-aware target.

    ``L = (sum_t CE_t + alpha * sum_{t metric} w_t KL_t + beta * sum_{t metric} w_t NN_t) / n``
    where CE is exactly ``F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1),
    ignore_index=...)`` (so ``alpha=0`` is plain CE bit for bit), NN_t the neighbor-negative
    term (only with ``negatives > 0``), and n the number of non-ignored positions
    (``normalise="tokens"``: a per-token average) or, for the KL and NN sums, of metric
    positions (``normalise="metric"``, what the reference code does).

    Args:
        logits: (..., V) floating; any batch shape.
        labels: (...) int64 next-token labels aligned with `logits` (shift them yourself for a
            causal LM, or use `causal_dist2_loss`); `ignore_index` marks positions without one.
        metric: `MetricTable` of V_d; its vocab_size must equal V.
        tau: target temperature (> 0). Paper default for numbers: 1 (the reference code: 4 or 2).
        alpha: KL weight (>= 0). Paper default: 0.1 (the reference code: 1.0).
        restrict: False (default, the paper's form): the KL reads the model's full-vocabulary
            softmax at V_d; True: renormalise it over V_d (the third-party reference code).
        target: "distance" (p_d, default) or "uniform" (the paper's ablation, see module doc).
        negatives: k nearest neighbors of the gold as contrastive negatives (0 = off, the
            paper's Sec. 3 loss); the toy's "full" row uses 2.
        beta: weight of the neighbor-negative term (>= 0; ours: 0.1, the paper's alpha).
        weights: optional (...) non-negative per-position weights of the KL (and NN) terms,
            e.g. ``place_values(labels, metric) + 1`` for place-value weighting.
        normalise: "tokens" or "metric" (see above).
        num_items_in_batch: divide the summed CE (and, with "tokens", the KL) by this count
            instead of this call's non-ignored positions: the count over a whole
            gradient-accumulated (and data-parallel) batch, as transformers' Trainer passes it.
        num_metric_in_batch: the same for the metric positions (needed with "metric" when
            `num_items_in_batch` is given).
        ignore_index: label of positions without a target.
        check_finite: raise a ValueError when the loss is not finite (one host sync).
        return_parts: also return ``{"ce": float, "dist2": float}`` (the unweighted KL term),
            plus ``"nn"`` with ``negatives > 0``.

    Returns:
        The scalar loss (dtype of the cross-entropy), or ``(loss, parts)``.

    Float32/float64 logits that require grad, with ``negatives=0``, no `weights` and no
    `return_parts`, take a fused backward (`_FusedDist2`: one (N, V) gradient, like CE alone);
    every other call goes through autograd. Both give the same values and gradients (tested).
    """
    check_tau(tau)
    check_alpha(alpha)
    check_alpha(beta, "beta")
    if not isinstance(metric, MetricTable):
        raise TypeError(f"metric: expected a MetricTable, got {type(metric).__name__}")
    check_target(target)
    check_negatives(negatives, metric)
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
    n_items = (
        None if num_items_in_batch is None else _count("num_items_in_batch", num_items_in_batch)
    )
    n_metric = (
        None if num_metric_in_batch is None else _count("num_metric_in_batch", num_metric_in_batch)
    )
    if normalise == "metric" and n_items is not None and n_metric is None:
        raise ValueError(
            "num_metric_in_batch: expected the metric-position count of the whole batch with "
            "normalise='metric' and num_items_in_batch given, got None"
        )
    vocab = logits.shape[-1]
    rows, g, valid = _metric_rows(logits, labels, metric, ignore_index)
    n_ce: Any = valid.sum() if n_items is None else n_items
    if normalise == "tokens":
        n_kl: Any = n_ce if n_items is not None else valid.sum().clamp(min=1)
    else:
        n_kl = n_metric if n_metric is not None else max(rows.numel(), 1)
    fused = (
        alpha > 0 and negatives == 0 and not return_parts and weights is None
        and logits.dtype in (torch.float32, torch.float64) and logits.requires_grad
    )  # fmt: skip
    parts: dict[str, float] = {}
    if fused:
        logp = _log_targets(metric, g, tau, target, logits.dtype)
        loss = _FusedDist2.apply(
            logits.reshape(-1, vocab), torch.where(valid, labels, 0).reshape(-1),
            valid.reshape(-1), rows, metric.ids_on(logits.device), logp.exp(), logp, alpha,
            _as_tensor(n_ce, logits), _as_tensor(n_kl, logits), restrict,
        )  # fmt: skip
    else:
        flat_logits, flat_labels = logits.reshape(-1, vocab), labels.reshape(-1)
        if n_items is None:
            ce = F.cross_entropy(flat_logits, flat_labels, ignore_index=ignore_index)
        else:
            ce = F.cross_entropy(
                flat_logits, flat_labels, ignore_index=ignore_index, reduction="sum"
            )
            ce = ce / _as_tensor(n_items, ce)
        loss = ce
        w = None if weights is None else weights.reshape(-1).index_select(0, rows)
        if alpha != 0 or return_parts:
            kl_rows = _kl_rows(logits, rows, g, metric, tau, restrict, target)
            kl_term = (kl_rows if w is None else kl_rows * w.to(kl_rows.dtype)).sum() / n_kl
            loss = loss if alpha == 0 else loss + (alpha * kl_term).to(ce.dtype)
            parts = {"ce": float(ce.detach()), "dist2": float(kl_term.detach())}
        if negatives > 0:
            nn_rows = _neighbor_rows(logits, rows, g, metric, negatives)
            nn_term = (nn_rows if w is None else nn_rows * w.to(nn_rows.dtype)).sum() / n_kl
            loss = loss + (beta * nn_term).to(ce.dtype)
            parts["nn"] = float(nn_term.detach())
    if check_finite and not bool(torch.isfinite(loss.detach())):
        raise ValueError(
            f"logits: the loss is {float(loss)}; logits hold NaN or inf (or every position is "
            f"ignored: labels are all ignore_index={ignore_index})"
        )
    return (loss, parts) if return_parts else loss


def _as_tensor(n: Any, like: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(n, device=like.device).to(like.dtype)


class _FusedDist2(torch.autograd.Function):
    """CE + alpha KL with ONE (N, V) gradient, written in place.

    Through autograd the KL's gather would get its own (N, V) gradient, then be added to
    CE's: twice the memory traffic of CE alone. Here the backward forms CE's gradient
    softmax(z) - onehot(y) once and adds, at the metric rows, alpha / n_kl times the KL's
    closed-form gradient: q - p_d on the V_d columns (restricted), or softmax(z) - p_d
    (full vocabulary, p_d zero outside V_d). The tests check both against autograd.
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
        n_ce: torch.Tensor,  # () CE normaliser
        n_kl: torch.Tensor,  # () KL normaliser
        restrict: bool,
    ) -> torch.Tensor:
        lse = torch.logsumexp(flat, dim=-1)  # (N,)
        ce_t = (lse - flat.gather(1, y[:, None]).squeeze(1)) * valid
        z = flat.index_select(1, ids).index_select(0, rows)
        logq = torch.log_softmax(z, dim=-1) if restrict else z - lse.index_select(0, rows)[:, None]
        kl = torch.where(p > 0, p * (logp - logq), torch.zeros((), dtype=p.dtype)).sum()
        ctx.save_for_backward(flat, lse, y, valid, rows, ids, p, logq, n_ce, n_kl)
        ctx.alpha, ctx.restrict = alpha, restrict
        return ce_t.sum() / n_ce + alpha * kl / n_kl

    @staticmethod
    def backward(ctx: Any, go: torch.Tensor) -> Any:  # type: ignore[override]
        flat, lse, y, valid, rows, ids, p, logq, n_ce, n_kl = ctx.saved_tensors
        scale = go / n_ce
        c = ctx.alpha * go / n_kl
        grad = torch.exp(flat - lse[:, None])  # softmax(z), (N, V)
        # full vocabulary: the KL's softmax(z) part at the metric rows, before grad is scaled
        full = grad.index_select(0, rows) * c if not ctx.restrict else None
        grad[torch.arange(grad.shape[0], device=grad.device), y] -= 1.0
        grad.mul_((valid * scale)[:, None])
        if full is None:
            grad[rows[:, None], ids[None, :]] += c * (logq.exp() - p)  # (M, K)
        else:
            grad.index_add_(0, rows, full)
            grad[rows[:, None], ids[None, :]] -= c * p
        return (grad, *([None] * 10))


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
