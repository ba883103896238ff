"""The oracle: DIST2Loss one position at a time, in float64, in plain Python arithmetic.

It is the paper's formula read literally, written apart from `dist2loss.loss` (no gathering,
masking, fused backward, batch counts or normalisation modes; no log-sum-exp trick beyond
subtracting the row maximum). At a position t with logits z (length V) and label g:

    CE_t   = -log softmax(z)_g
    p_d(v) = exp(-d(v, g)/tau) / sum_{v' in V_d} exp(-d(v', g)/tau)        (g in V_d)
    p_u(v) = p_d(g) if v = g else (1 - p_d(g)) / (K - 1)    (target="uniform")
    q(v)   = exp(z_v) / sum_{v' in V} exp(z_v')     (restrict=False, the paper's)
           = exp(z_v) / sum_{v' in V_d} exp(z_v')   (restrict=True)
    KL_t   = sum_{v in V_d} p(v) log(p(v) / q(v))
    NN_t   = -log exp(z_g) / sum_{v in {g} + N_k(g)} exp(z_v)   (k nearest by d, ties by order)

`reference_terms` gives these per position; `reference_dist2_loss` the paper's per-token
average ``L = (1/n) sum_t [CE_t + w_t (alpha KL_t + beta NN_t)]`` over the n labelled positions
(KL_t = NN_t = 0 where g is not in V_d). The tests compare `dist2loss.dist2_loss` with it, and
build its other normalisations (per metric position, outside counts) from `reference_terms`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from dist2loss.metric import MetricTable


@dataclass(frozen=True)
class PositionTerms:
    """The loss terms at one labelled position: CE_t, and KL_t and NN_t where g is in V_d
    (None elsewhere; NN_t also None without negatives)."""

    ce: float
    kl: float | None
    nn: float | None


def _softmax(xs: list[float]) -> list[float]:
    top = max(xs)
    e = [math.exp(x - top) for x in xs]
    total = sum(e)
    return [v / total for v in e]


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
    row = metric.distance.tolist()[ids.index(g)]
    p = _softmax([-d / tau for d in row])  # p_d over V_d, in table order
    if target == "uniform":
        gold = p[ids.index(g)]
        p = [gold if v == g else (1.0 - gold) / (len(ids) - 1) for v in ids]
    if restrict:
        q = _softmax([z[v] for v in ids])
    else:
        full = _softmax(z)
        q = [full[v] for v in ids]
    return sum(pi * math.log(pi / qi) for pi, qi in zip(p, q, strict=True) if pi > 0)


def position_neighbor_nll(z: list[float], g: int, metric: MetricTable, k: int) -> float:
    """-log softmax over g and its k nearest members of V_d (ties by table order), at g."""
    ids = metric.token_ids.tolist()
    row = metric.distance.tolist()[ids.index(g)]
    nearest = sorted((v for v in ids if v != g), key=lambda v: (row[ids.index(v)], ids.index(v)))
    return -math.log(_softmax([z[v] for v in [g, *nearest[:k]]])[0])


def reference_terms(
    logits: torch.Tensor,
    labels: torch.Tensor,
    metric: MetricTable,
    tau: float,
    *,
    restrict: bool = False,
    target: str = "distance",
    negatives: int = 0,
    ignore_index: int = -100,
) -> list[PositionTerms | None]:
    """`PositionTerms` of every position of (..., V) `logits` and (...) `labels`, flattened in
    row-major order; None where the label is `ignore_index`."""
    members = set(metric.token_ids.tolist())
    out: list[PositionTerms | None] = []
    rows = logits.detach().to(torch.float64).reshape(-1, logits.shape[-1]).tolist()
    for z, g in zip(rows, labels.reshape(-1).tolist(), strict=True):
        if g == ignore_index:
            out.append(None)
            continue
        ce = -math.log(_softmax(z)[g])
        if g not in members:
            out.append(PositionTerms(ce, None, None))
            continue
        kl = position_kl(z, g, metric, tau, restrict, target)
        nn = position_neighbor_nll(z, g, metric, negatives) if negatives > 0 else None
        out.append(PositionTerms(ce, kl, nn))
    return out


def reference_dist2_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    metric: MetricTable,
    *,
    tau: float,
    alpha: float,
    beta: float = 0.0,
    negatives: int = 0,
    weights: torch.Tensor | None = None,
    restrict: bool = False,
    target: str = "distance",
    ignore_index: int = -100,
) -> float:
    """The paper's per-token average ``(1/n) sum_t [CE_t + w_t (alpha KL_t + beta NN_t)]``
    over the n labelled positions; `weights` (...) gives w_t (default 1)."""
    terms = reference_terms(
        logits, labels, metric, tau,
        restrict=restrict, target=target, negatives=negatives, ignore_index=ignore_index,
    )  # fmt: skip
    w = [1.0] * len(terms) if weights is None else weights.reshape(-1).tolist()
    total, n = 0.0, 0
    for t, w_t in zip(terms, w, strict=True):
        if t is None:
            continue
        n += 1
        total += t.ce + w_t * (alpha * (t.kl or 0.0) + beta * (t.nn or 0.0))
    return total / n
