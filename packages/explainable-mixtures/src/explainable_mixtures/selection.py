"""Pruning, merging and BIC selection of the rule set (Sec. 4 of the paper, steps 3 and 4).

Between training stages `prune_and_merge` drops dead rules (`alive_rules`: an empty box on a
used feature, or a share of the data below ``min_share``) and merges redundant pairs (covered
sets with Jaccard above ``merge_jaccard`` and components closer than ``merge_hellinger``). After
training `select_by_bic` drops or merges rules and `simplify_by_bic` opens box sides, each while
``BIC = 2 NLL + |Theta| log n`` falls; `n_parameters` is ``|Theta|``; after the last stage
`drop_dead` removes a rule that stage starved. Every function returns a
new `RuleMixture` (or the one it was given) and never changes its argument's parameters,
except that `prune_and_merge` and the BIC searches re-induce the components they score.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from explainable_mixtures.parameterisation import (
    FEATURE_USE,
    component_moments,
    subset,
    used_features,
)


def hellinger(mean: np.ndarray, cov: np.ndarray, i: int, j: int) -> float:
    """Hellinger distance between the Gaussians with the moments of components i and j
    (`mean` ``(k, d_y)``, `cov` ``(k, d_y, d_y)``)."""
    s = 0.5 * (cov[i] + cov[j])
    diff = mean[i] - mean[j]
    log_bc = (
        -0.125 * float(diff @ np.linalg.solve(s, diff))
        - 0.5 * np.linalg.slogdet(s)[1]
        + 0.25 * (np.linalg.slogdet(cov[i])[1] + np.linalg.slogdet(cov[j])[1])
    )
    return math.sqrt(max(0.0, 1.0 - math.exp(log_bc)))


def coverage(model: Any, x: torch.Tensor, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows each rule covers (``e_i(x) > 1/2``, ``(n, k)`` bool) and each rule's share ``(k,)``."""
    with torch.no_grad():
        log_e = model.log_activation(x, tau)
        share = torch.exp(log_e - torch.logsumexp(log_e, -1, keepdim=True)).mean(0)
        return (torch.exp(log_e) > 0.5).numpy(), share.double().numpy()


def jaccard(covered: np.ndarray, i: int, j: int) -> float:
    """Jaccard index of the rows rules i and j cover (`covered` ``(n, k)`` bool)."""
    union = np.logical_or(covered[:, i], covered[:, j]).sum()
    return float(np.logical_and(covered[:, i], covered[:, j]).sum() / union) if union else 0.0


def containment(covered: np.ndarray, i: int, j: int) -> float:
    """Share of the smaller of the two rules' covered rows that the other also covers."""
    smaller = min(covered[:, i].sum(), covered[:, j].sum())
    return float(np.logical_and(covered[:, i], covered[:, j]).sum() / smaller) if smaller else 0.0


def merge(model: Any, i: int, j: int, share: np.ndarray) -> Any:
    """Rule ``i`` absorbs rule ``j``: the hull of both boxes, the larger feature weights, and
    the moment-matched Gaussian of their two components (weighted by `share`, ``(k,)``)."""
    merged = subset(model, [r for r in range(model.k) if r != j])
    at = i if i < j else i - 1
    with torch.no_grad():
        c = model.components
        rho = torch.softmax(c.sub_logits, -1)
        s = torch.as_tensor(share[[i, j]], dtype=c.mu.dtype)
        w = (s[:, None] * rho[[i, j]]).reshape(-1)
        w = w / w.sum()
        mu = c.mu[[i, j]].reshape(-1, c.mu.shape[-1])
        cov = c.covariance()[[i, j]].reshape(-1, *c.mu.shape[-1:], c.mu.shape[-1])
        mean = (w[:, None] * mu).sum(0)
        dev = mu - mean
        cov_m = (w[:, None, None] * (cov + dev[:, :, None] * dev[:, None, :])).sum(0)
        chol = torch.linalg.cholesky(cov_m)
        mc = merged.components
        mc.mu[at] = mean
        mc.log_diag[at] = torch.log(torch.diagonal(chol))
        mc.lower[at] = torch.tril(chol, diagonal=-1)
        mc.sub_logits[at] = 0.0
        merged.alpha[at] = torch.minimum(model.alpha[i], model.alpha[j])
        merged.beta[at] = torch.maximum(model.beta[i], model.beta[j])
        a = torch.maximum(model.feature_weights()[i], model.feature_weights()[j])
        merged.a_raw[at] = a + torch.log(-torch.expm1(-a))
    return merged


def alive_rules(model: Any, x: torch.Tensor, tau: float, min_share: float) -> list[int]:
    """The rules to keep: those whose share of the rows ``x (n, d)`` is at least `min_share`
    and whose box is not empty on a used feature (``alpha > beta``); the largest-share rule
    when none is."""
    _, share = coverage(model, x, tau)
    with torch.no_grad():
        a = model.feature_weights()
        used = (a >= FEATURE_USE * a.max(dim=1, keepdim=True).values).numpy()
        empty = ((model.alpha > model.beta).numpy() & used).any(1)
    alive = [i for i in range(model.k) if share[i] >= min_share and not empty[i]]
    return alive or [int(np.argmax(share))]


def drop_dead(model: Any, x: torch.Tensor, y: torch.Tensor, tau: float, min_share: float) -> Any:
    """The model with only its `alive_rules`, components induced anew (the same model when
    all are alive)."""
    alive = alive_rules(model, x, tau, min_share)
    if len(alive) == model.k:
        return model
    model = subset(model, alive)
    model.induce(x, y, tau)
    return model


def prune_and_merge(
    model: Any,
    x: torch.Tensor,
    y: torch.Tensor,
    tau: float,
    *,
    min_share: float,
    merge_jaccard: float,
    merge_hellinger: float,
) -> Any:
    """Drop dead rules (`alive_rules`), then merge redundant pairs; returns a new model (or
    the same)."""
    covered, share = coverage(model, x, tau)
    alive = alive_rules(model, x, tau, min_share)
    if len(alive) < model.k:
        model = subset(model, alive)
        model.induce(x, y, tau)
        covered, share = covered[:, alive], share[alive]
    while model.k > 1:
        mean, cov = component_moments(model)
        pairs = [
            (i, j)
            for i in range(model.k)
            for j in range(model.k)
            if share[i] >= share[j]
            and i != j
            and jaccard(covered, i, j) > merge_jaccard
            and hellinger(mean, cov, i, j) < merge_hellinger
        ]
        if not pairs:
            break
        i, j = pairs[0]
        model = merge(model, i, j, share)
        model.induce(x, y, tau)
        covered, share = coverage(model, x, tau)
    return model


def n_parameters(model: Any, x: torch.Tensor, count: str) -> int:
    """BIC's ``|Theta|``: one per closed side of a used condition (the rule parameters, the
    paper's count; the weights ``a_ij`` only decide which conditions are used), plus with
    ``count="all"`` the components' parameters. The rows `x` give the data range."""
    used = used_features(model, x)
    with torch.no_grad():
        z = (x - model.x_loc) / model.x_scale
        low = (model.alpha > z.min(0).values).numpy()
        high = (model.beta < z.max(0).values).numpy()
    thresholds = int((used & low).sum() + (used & high).sum())
    return thresholds + (model.components.n_parameters() if count == "all" else 0)


def bic(
    model: Any,
    x: torch.Tensor,
    y: torch.Tensor,
    tau: float,
    count: str,
    span: torch.Tensor | None = None,
) -> float:
    """``2 NLL + |Theta| log n`` on the rows ``(x, y)``; `span` (default `x`) gives the range."""
    with torch.no_grad():
        nll = -float(model.log_density(x, y, tau).double().sum())
    n_params = n_parameters(model, x if span is None else span, count)
    return 2.0 * nll + n_params * math.log(len(x))


def induced_bic(model: Any, x: torch.Tensor, y: torch.Tensor, tau: float, count: str) -> float:
    """BIC of a candidate rule set on the training rows, its components induced anew first
    (induced components are functions of the rules)."""
    model.induce(x, y, tau)
    return bic(model, x, y, tau, count)


def simplify_by_bic(model: Any, x: torch.Tensor, y: torch.Tensor, tau: float, count: str) -> Any:
    """Drop rule conditions while BIC falls: each pass scores opening every closed side of
    every used condition (moving its threshold far outside the data) and applies the ones
    that lower BIC, best first, each re-checked against the model as it then is."""
    with torch.no_grad():
        z = (x - model.x_loc) / model.x_scale
        z_min, z_max = z.min(0).values - 10.0, z.max(0).values + 10.0
    best_bic = induced_bic(model, x, y, tau, count)
    changed = True
    while changed:
        changed = False
        used = used_features(model, x)
        sides = [
            (i, j, side)
            for i, j in zip(*np.nonzero(used), strict=True)
            for side in ("alpha", "beta")
        ]
        scored = []
        for i, j, side in sides:
            score = induced_bic(opened(model, i, j, side, z_min, z_max), x, y, tau, count)
            if score < best_bic:
                scored.append((score, i, j, side))
        for _, i, j, side in sorted(scored):
            candidate = opened(model, i, j, side, z_min, z_max)
            score = induced_bic(candidate, x, y, tau, count)
            if score < best_bic:
                model, best_bic, changed = candidate, score, True
    return model


def opened(model: Any, i: int, j: int, side: str, z_min: torch.Tensor, z_max: torch.Tensor) -> Any:
    """A copy of `model` with the `side` ("alpha" or "beta") threshold of rule i on feature j
    opened (moved to `z_min` or `z_max`, ``(d,)`` in standard units)."""
    out = subset(model, list(range(model.k)))
    with torch.no_grad():
        if side == "alpha":
            out.alpha[i, j] = z_min[j]
        else:
            out.beta[i, j] = z_max[j]
    return out


def select_by_bic(
    model: Any, x: torch.Tensor, y: torch.Tensor, tau: float, merge_jaccard: float, count: str
) -> Any:
    """Greedy BIC descent over the rule set: at each step take the candidate with the lowest
    BIC among dropping one rule and merging two rules one of which mostly lies inside the
    other (`containment` of their covered rows above `merge_jaccard`, components
    moment-matched); stop when none lowers BIC."""
    best, best_bic = model, induced_bic(model, x, y, tau, count)
    while best.k > 1:
        covered, share = coverage(best, x, tau)
        candidates = [subset(best, [r for r in range(best.k) if r != i]) for i in range(best.k)]
        candidates += [
            merge(best, i, j, share)
            for i in range(best.k)
            for j in range(i + 1, best.k)
            if containment(covered, i, j) > merge_jaccard
        ]
        scores = [induced_bic(c, x, y, tau, count) for c in candidates]
        i = int(np.argmin(scores))
        if scores[i] >= best_bic:
            break
        best, best_bic = candidates[i], scores[i]
    return best
