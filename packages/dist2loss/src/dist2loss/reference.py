"""The oracle: DIST2Loss one position at a time, in float64, in plain Python arithmetic.

It follows the paper's definitions literally, with no gathering, masking or log-sum-exp
tricks beyond subtracting the row maximum:

    p_d(v | g) = exp(-d(v, g)/tau) / sum_{v' in V_d} exp(-d(v', g)/tau)
    p_u(v | g) = p_d(g | g) if v = g else (1 - p_d(g | g)) / (K - 1)   (target="uniform")
    q(v)       = exp(z_v) / sum_{v' in V}   exp(z_v')          (full vocabulary, default)
               = exp(z_v) / sum_{v' in V_d} exp(z_v')          (restricted)
    KL_t       = sum_{v in V_d} p(v) log(p(v) / q(v))
    NN_t       = -log exp(z_g) / sum_{v in {g} + N_k(g)} exp(z_v)   (k nearest by d, ties by order)
    CE_t       = -log softmax(z)_g
    L          = sum_t CE_t / n + (alpha * sum_t w_t KL_t + beta * sum_t w_t NN_t) / n_kl

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


def position_kl(
    z: list[float],
    g: int,
    metric: MetricTable,
    tau: float,
    restrict: bool = False,
    target: str = "distance",
) -> float:
    """KL(p || q) at one position with logits `z` (length V) and label id `g` in V_d."""
    ids = metric.token_ids.tolist()
    dist = metric.distance.tolist()
    j = ids.index(g)
    neg = [-dist[j][i] / tau for i in range(len(ids))]
    log_zp = _log_sum_exp(neg)
    logps = [n - log_zp for n in neg]
    if target == "uniform":
        gold = math.exp(logps[j])
        rest = (1.0 - gold) / (len(ids) - 1)
        logps = [
            logps[j] if i == j else (math.log(rest) if rest > 0 else -math.inf)
            for i in range(len(ids))
        ]
    zq = [z[v] for v in ids]
    log_zq = _log_sum_exp(zq if restrict else z)
    kl = 0.0
    for i in range(len(ids)):
        p = math.exp(logps[i])
        if p > 0:
            kl += p * (logps[i] - (zq[i] - log_zq))
    return kl


def position_neighbor_nll(z: list[float], g: int, metric: MetricTable, k: int) -> float:
    """-log softmax over g and its k nearest members of V_d (ties by table order), at g."""
    ids = metric.token_ids.tolist()
    dist = metric.distance.tolist()
    j = ids.index(g)
    others = sorted((i for i in range(len(ids)) if i != j), key=lambda i: (dist[j][i], i))
    chosen = [j, *others[:k]]
    return _log_sum_exp([z[ids[i]] for i in chosen]) - z[g]


def reference_dist2_loss(
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
    normalise: str = "tokens",
    num_items_in_batch: float | None = None,
    num_metric_in_batch: float | None = None,
    ignore_index: int = -100,
) -> float:
    """DIST2Loss of (..., V) `logits` and (...) `labels`, position by position (float64)."""
    z_all = logits.detach().to(torch.float64).reshape(-1, logits.shape[-1]).tolist()
    y_all = labels.reshape(-1).tolist()
    w_all = weights.reshape(-1).tolist() if weights is not None else [1.0] * len(y_all)
    members = set(metric.token_ids.tolist())
    ce_sum, aux_sum, n_tokens, n_metric = 0.0, 0.0, 0, 0
    for z, y, w in zip(z_all, y_all, w_all, strict=True):
        if y == ignore_index:
            continue
        n_tokens += 1
        ce_sum += _log_sum_exp(z) - z[y]
        if y in members:
            n_metric += 1
            aux = alpha * position_kl(z, y, metric, tau, restrict, target)
            if negatives > 0:
                aux += beta * position_neighbor_nll(z, y, metric, negatives)
            aux_sum += w * aux
    n_ce = float(num_items_in_batch) if num_items_in_batch is not None else n_tokens
    if normalise == "tokens":
        n_kl = n_ce if num_items_in_batch is not None else max(n_tokens, 1)
    else:
        n_kl = float(num_metric_in_batch) if num_metric_in_batch is not None else max(n_metric, 1)
    return ce_sum / n_ce + aux_sum / n_kl
