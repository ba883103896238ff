"""The oracle: DIST2Loss one position at a time, in float64, in plain Python arithmetic.

It follows the paper's definitions literally, with no gathering, masking or log-sum-exp
tricks beyond subtracting the row maximum:

    p_d(v | g) = exp(-d(v, g)/tau) / sum_{v' in V_d} exp(-d(v', g)/tau)
    q(v)       = exp(z_v) / sum_{v' in V_d} exp(z_v')          (restricted)
               = exp(z_v) / sum_{v' in V}   exp(z_v')          (not restricted)
    KL_t       = sum_{v in V_d} p_d(v) log(p_d(v) / q(v))
    CE_t       = -log softmax(z)_g
    L          = (sum_t CE_t + alpha * sum_t w_t KL_t) / n   (n: non-ignored positions)

The tests check `dist2loss.dist2_loss` against it, and it against closed forms (tau -> 0,
tau -> inf, the gradient q - p_d).
"""

from __future__ import annotations

import math

import torch

from dist2loss.metric import MetricTable


def _log_sum_exp(xs: list[float]) -> float:
    top = max(xs)
    return top + math.log(sum(math.exp(x - top) for x in xs))


def position_kl(z: list[float], g: int, metric: MetricTable, tau: float, restrict: bool) -> float:
    """KL(p_d || q) at one position with logits `z` (length V) and label id `g` in V_d."""
    ids = metric.token_ids.tolist()
    dist = metric.distance.tolist()
    j = ids.index(g)
    neg = [-dist[j][i] / tau for i in range(len(ids))]
    log_zp = _log_sum_exp(neg)
    zq = [z[v] for v in ids]
    log_zq = _log_sum_exp(zq if restrict else z)
    kl = 0.0
    for i in range(len(ids)):
        logp = neg[i] - log_zp
        p = math.exp(logp)
        if p > 0:
            kl += p * (logp - (zq[i] - log_zq))
    return kl


def reference_dist2_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    metric: MetricTable,
    tau: float = 1.0,
    alpha: float = 0.1,
    *,
    restrict: bool = True,
    weights: torch.Tensor | None = None,
    normalise: str = "tokens",
    ignore_index: int = -100,
) -> float:
    """DIST2Loss of (..., V) `logits` and (...) `labels`, position by position (float64)."""
    z_all = logits.detach().to(torch.float64).reshape(-1, logits.shape[-1]).tolist()
    y_all = labels.reshape(-1).tolist()
    w_all = weights.reshape(-1).tolist() if weights is not None else [1.0] * len(y_all)
    members = set(metric.token_ids.tolist())
    ce_sum, kl_sum, n_tokens, n_metric = 0.0, 0.0, 0, 0
    for z, y, w in zip(z_all, y_all, w_all, strict=True):
        if y == ignore_index:
            continue
        n_tokens += 1
        ce_sum += _log_sum_exp(z) - z[y]
        if y in members:
            n_metric += 1
            kl_sum += w * position_kl(z, y, metric, tau, restrict)
    n_kl = n_tokens if normalise == "tokens" else max(n_metric, 1)
    return ce_sum / n_tokens + alpha * kl_sum / n_kl
