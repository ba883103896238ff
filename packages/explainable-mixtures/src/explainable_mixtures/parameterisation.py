"""The rule parameterisation: k-means++ anchoring to a `RuleMixture`, and back to readable rules.

A rule ``i`` is stored in standard units as thresholds ``alpha_i, beta_i`` (``(d,)`` each) and
feature weights ``a_i`` (``(d,)``, ``a_ij > 0``); feature ``j`` is *used* when ``a_ij`` is at
least `FEATURE_USE` of the rule's largest weight and its box cuts the data. `read_rules` turns a
trained module into `Rule` objects in the user's units: a threshold outside the training range
is an open side (``None``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

FEATURE_USE = 0.05  # a feature whose weight a_ij is below 5 % of the rule's largest is unused


@dataclass(frozen=True)
class Condition:
    """``low <= feature <= high`` in the feature's own units; ``None`` is an open side."""

    feature: str
    low: float | None
    high: float | None

    def __str__(self) -> str:
        if self.low is not None and self.high is not None:
            return f"{self.low:.4g} <= {self.feature} <= {self.high:.4g}"
        if self.low is not None:
            return f"{self.feature} >= {self.low:.4g}"
        return f"{self.feature} <= {self.high:.4g}"


@dataclass(frozen=True)
class Rule:
    """One learned rule, its component's moments (user units) and its share of the data."""

    conditions: tuple[Condition, ...]
    share: float  # mean over the training rows of w_i(x)
    mean: tuple[float, ...]
    std: tuple[float, ...]
    target_names: tuple[str, ...]

    def __str__(self) -> str:
        body = " AND ".join(str(c) for c in self.conditions) or "always"
        moments = ", ".join(
            f"{t} ~ {m:.4g} ± {s:.3g}"
            for t, m, s in zip(self.target_names, self.mean, self.std, strict=True)
        )
        return f"IF {body} THEN {moments}  ({100 * self.share:.1f} % of rows)"

    def box(self, names: Sequence[str], bounds: np.ndarray) -> np.ndarray:
        """``(d, 2)`` box with open sides closed at `bounds` (``(d, 2)``, e.g. the data range)."""
        out = np.array(bounds, dtype=np.float64, copy=True)
        index = {n: j for j, n in enumerate(names)}
        for c in self.conditions:
            j = index[c.feature]
            if c.low is not None:
                out[j, 0] = max(out[j, 0], c.low)
            if c.high is not None:
                out[j, 1] = min(out[j, 1], c.high)
        return out


def initial_model(
    x: np.ndarray, t: np.ndarray, k: int, n_sub: int, seed: int, dt: Any, induced: bool
) -> Any:
    """`RuleMixture` with `k` rules anchored at k-means++ centres of the standardised ``(x, y)``.

    ``x (n, d)``, ``t (n, d_y)``: each centre's Voronoi cell gives its rule's initial box (the
    cell's 10 % and 90 % feature quantiles) and its component's initial mean and covariance
    (`n_sub` Gaussians per rule), in dtype `dt`.
    """
    import torch
    from sklearn.cluster import kmeans_plusplus

    from explainable_mixtures.components import GaussianComponents
    from explainable_mixtures.model import RuleMixture

    x_loc, x_scale = x.mean(0), x.std(0)
    y_loc, y_scale = t.mean(0), t.std(0)
    z, u = (x - x_loc) / x_scale, (t - y_loc) / y_scale
    joint = np.concatenate([z, u], axis=1)
    centres, _ = kmeans_plusplus(joint, n_clusters=k, random_state=seed)
    cell = ((joint[:, None, :] - centres[None]) ** 2).sum(-1).argmin(1)
    d, dy = z.shape[1], u.shape[1]
    alpha, beta = np.empty((k, d)), np.empty((k, d))
    means, covs = np.empty((k, n_sub, dy)), np.empty((k, n_sub, dy, dy))
    rng = np.random.default_rng(seed)
    for i in range(k):
        members = cell == i
        if members.sum() >= 2:
            alpha[i], beta[i] = np.quantile(z[members], [0.1, 0.9], axis=0)
            mu, cov = u[members].mean(0), np.atleast_2d(np.cov(u[members].T))
        else:
            alpha[i], beta[i] = centres[i, :d] - 0.5, centres[i, :d] + 0.5
            mu, cov = centres[i, d:], np.eye(dy)
        cov = cov + 0.05 * np.eye(dy)  # a floor, so a tight cell starts with a usable density
        # several Gaussians per rule start spread along the cell's spread
        means[i] = mu + rng.normal(0.0, 0.3, (n_sub, dy)) * np.sqrt(np.diag(cov)) * (n_sub > 1)
        covs[i] = cov
    tensor = lambda a: torch.as_tensor(a, dtype=dt)  # noqa: E731
    return RuleMixture(
        tensor(alpha),
        tensor(beta),
        torch.ones(k, d, dtype=dt),
        GaussianComponents(tensor(means), tensor(covs)),
        tensor(x_loc),
        tensor(x_scale),
        tensor(y_loc),
        tensor(y_scale),
        induced,
    )


def subset(model: Any, keep: Sequence[int]) -> Any:
    """A new `RuleMixture` with only the rules in `keep` (same parameters)."""
    import torch

    from explainable_mixtures.components import GaussianComponents
    from explainable_mixtures.model import RuleMixture

    idx = torch.as_tensor(list(keep), dtype=torch.long)
    with torch.no_grad():
        comps = GaussianComponents(model.components.mu[idx], model.components.covariance()[idx])
        comps.sub_logits.copy_(model.components.sub_logits[idx])
        return RuleMixture(
            model.alpha[idx],
            model.beta[idx],
            model.feature_weights()[idx],
            comps,
            model.x_loc,
            model.x_scale,
            model.y_loc,
            model.y_scale,
            model.induced,
        )


def used_features(model: Any, x: Any) -> np.ndarray:
    """``(k, d)`` bool: the features a rule reads (weight >= 5 % of its largest, box cuts the data)."""
    import torch

    with torch.no_grad():
        a = model.feature_weights()
        z = (x - model.x_loc) / model.x_scale
        cuts = (model.alpha > z.min(0).values) | (model.beta < z.max(0).values)
        heavy = a >= FEATURE_USE * a.max(dim=1, keepdim=True).values
    return (heavy & cuts).numpy()


def component_moments(model: Any) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``(k, d_y)`` and covariance ``(k, d_y, d_y)`` of each component, in user units."""
    import torch

    with torch.no_grad():
        c = model.components
        rho = torch.softmax(c.sub_logits, -1).double()  # (k, S)
        mu, cov = c.mu.double(), c.covariance().double()
        mean = (rho[..., None] * mu).sum(1)
        dev = mu - mean[:, None]
        second = cov + dev[..., :, None] * dev[..., None, :]
        cov_all = (rho[..., None, None] * second).sum(1)
        s = model.y_scale.double()
        mean = mean * s + model.y_loc.double()
        cov_all = cov_all * s[:, None] * s[None, :]
    return mean.numpy(), cov_all.numpy()


def read_rules(
    model: Any,
    x: Any,
    tau: float,
    feature_names: Sequence[str],
    target_names: Sequence[str],
    x_range: np.ndarray,
) -> list[Rule]:
    """The `Rule` of each of the model's rules, in its order: the used features' conditions
    (a side outside `x_range`, ``(d, 2)`` training minima and maxima, is open), the component's
    moments, and the rule's mean weight ``w_i`` over the rows ``x (n, d)`` at temperature `tau`."""
    import torch

    with torch.no_grad():
        share = torch.exp(model.log_weights(x, tau)).mean(0).double().numpy()
        used = used_features(model, x)
        lo = (model.alpha * model.x_scale + model.x_loc).double().numpy()
        hi = (model.beta * model.x_scale + model.x_loc).double().numpy()
        mean, cov = component_moments(model)
    rules = []
    for i in range(model.k):
        conds = tuple(
            Condition(
                feature_names[int(j)],
                float(lo[i, j]) if lo[i, j] > x_range[j, 0] else None,
                float(hi[i, j]) if hi[i, j] < x_range[j, 1] else None,
            )
            for j in np.flatnonzero(used[i])
        )
        rules.append(
            Rule(
                conds,
                float(share[i]),
                tuple(float(v) for v in mean[i]),
                tuple(float(v) for v in np.sqrt(np.diag(cov[i]))),
                tuple(target_names),
            )
        )
    return rules
