"""`ExplainableMixture`: fit an explainable mixture model (EMM) like a scikit-learn estimator.

The learning procedure (Sec. 4 of the paper), in order:

1. Over-provision ``n_rules`` rules, anchored at k-means++ centres of the standardised joint
   data ``(x, y)``: each centre's Voronoi cell gives its rule's initial box (the cell's 10 %
   and 90 % feature quantiles) and its component's initial mean and covariance.
2. Minimise ``mean NLL + lam * R + gamma * C`` (``R`` the overlap penalty, ``C`` our
   coverage penalty, see `explainable_mixtures.rules.coverage_penalty`) by gradient descent through
   `shared_core.train.fit`, annealing the temperature geometrically from ``tau_start`` to
   ``tau_end`` (standard units) over all steps.
3. Between ``prune_rounds + 1`` equal stages, prune dead rules (empty box on a used feature,
   or a share of the data below ``min_share``) and merge redundant ones (covered sets with
   Jaccard above ``merge_jaccard`` and components closer than ``merge_hellinger``).
4. Select the rule set by BIC (``2 NLL + |Theta| log n``): drop a rule or merge two that cover
   the same rows, one step at a time while BIC falls; then drop conditions (open a side of a
   box) while BIC falls; then polish the survivors for one more stage at ``tau_end``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from explainable_mixtures._checks import (
    as_matrix,
    check_names,
    check_not_constant,
    check_number,
    check_positive_int,
    check_same_rows,
)

FEATURE_USE = 0.05  # a feature whose weight a_ij is below 5 % of the rule's largest is unused
LAM = 0.1  # overlap weight: see the README's lambda ablation for the choice
BIC_COUNTS = ("rules", "all")


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


class ExplainableMixture(RegressorMixin, BaseEstimator):  # type: ignore[misc]
    """Explainable mixture model: ``p(y | x) = sum_i w_i(x) p_i(y)`` with readable box rules.

    A scikit-learn estimator: `get_params`/`set_params`, `clone`, pickling, ``fit`` returns
    self; ``predict`` is ``E[y | x]``, ``score`` the mean ``log p(y | x)`` (not R^2). The
    defaults are the paper's method (see the README for what it leaves open); ``components=
    "free"``, ``gamma > 0`` and ``bic_count="all"`` are our 0.1.0 variants.

    Args:
        n_rules: initial (over-provisioned) number of rules ``k``.
        n_sub: Gaussians per rule component (``components="free"`` only; 1 with "induced").
        components: "induced" (the paper's: each rule's Gaussian is fitted to the rows its
            rule soft-covers, jointly with the rules) or "free" (ours: trained parameters).
        lam: weight of the overlap penalty ``R`` (chosen from the lambda ablation, README).
        gamma: weight of our coverage penalty ``C`` (0: the paper's objective ``NLL + lam R``).
        tau_start: initial temperature, in standard deviations of each feature.
        tau_end: final temperature (geometric annealing), same units.
        steps: gradient steps in all.
        lr: AdamW learning rate (constant).
        prune_rounds: pruning/merging rounds between the training stages.
        min_share: a rule covering less than this share of the rows is pruned.
        merge_jaccard: two rules covering rows with a Jaccard above this may merge.
        merge_hellinger: ... if their components are closer than this Hellinger distance.
        bic_select: select the rule set (and drop conditions) by BIC after training.
        bic_count: BIC's ``|Theta|``: "rules" (the paper's: the rule parameters only, one per
            threshold of a condition) or "all" (ours: plus the components' parameters).
        batch_size: rows per step (all rows when there are fewer).
        seed: seeds the k-means++ anchoring and the minibatches.
        device: where to train ("cpu", "cuda", ...).
        dtype: "float32" or "float64".
        show_progress: print fit's progress bar.
    """

    def __init__(
        self,
        n_rules: int = 8,
        *,
        n_sub: int = 1,
        components: str = "induced",
        lam: float = LAM,
        gamma: float = 0.0,
        tau_start: float = 0.2,
        tau_end: float = 0.02,
        steps: int = 800,
        lr: float = 0.03,
        prune_rounds: int = 3,
        min_share: float = 0.02,
        merge_jaccard: float = 0.8,
        merge_hellinger: float = 0.3,
        bic_select: bool = True,
        bic_count: str = "rules",
        batch_size: int = 4096,
        seed: int = 0,
        device: str = "cpu",
        dtype: str = "float32",
        show_progress: bool = False,
    ) -> None:
        self.n_rules = n_rules
        self.n_sub = n_sub
        self.components = components
        self.lam = lam
        self.gamma = gamma
        self.tau_start = tau_start
        self.tau_end = tau_end
        self.steps = steps
        self.lr = lr
        self.prune_rounds = prune_rounds
        self.min_share = min_share
        self.merge_jaccard = merge_jaccard
        self.merge_hellinger = merge_hellinger
        self.bic_select = bic_select
        self.bic_count = bic_count
        self.batch_size = batch_size
        self.seed = seed
        self.device = device
        self.dtype = dtype
        self.show_progress = show_progress
        self._validate()

    def set_params(self, **params: Any) -> ExplainableMixture:
        """scikit-learn's `set_params`, then the same checks as the constructor."""
        super().set_params(**params)
        self._validate()
        return self

    def _validate(self) -> None:
        """Check the hyper-parameters (stored as given, scikit-learn's convention)."""
        check_positive_int("n_rules", self.n_rules)
        check_positive_int("n_sub", self.n_sub)
        if self.components not in ("induced", "free"):
            raise ValueError(f"components: expected 'induced' or 'free', got {self.components!r}")
        if self.components == "induced" and self.n_sub != 1:
            raise ValueError(
                f"n_sub: induced components are one Gaussian per rule (n_sub=1), got "
                f"{self.n_sub}; use components='free' for a mixture per rule"
            )
        check_number("lam", self.lam, low=0.0, strict=False)
        check_number("gamma", self.gamma, low=0.0, strict=False)
        check_number("tau_start", self.tau_start, low=0.0)
        check_number("tau_end", self.tau_end, low=0.0)
        if self.tau_end > self.tau_start:
            raise ValueError(
                f"tau_end: expected <= tau_start = {self.tau_start} (the temperature is "
                f"annealed down), got {self.tau_end}"
            )
        check_positive_int("steps", self.steps)
        check_number("lr", self.lr, low=0.0)
        check_number("prune_rounds", self.prune_rounds, low=0, strict=False)
        check_number("min_share", self.min_share, low=0.0, strict=False)
        if self.min_share >= 1:
            raise ValueError(f"min_share: expected a share in [0, 1), got {self.min_share}")
        check_number("merge_jaccard", self.merge_jaccard, low=0.0)
        check_number("merge_hellinger", self.merge_hellinger, low=0.0)
        if not isinstance(self.bic_select, (bool, np.bool_)):
            raise TypeError(f"bic_select: expected a bool, got {self.bic_select!r}")
        if self.bic_count not in BIC_COUNTS:
            raise ValueError(f"bic_count: expected one of {BIC_COUNTS}, got {self.bic_count!r}")
        check_positive_int("batch_size", self.batch_size)
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype: expected 'float32' or 'float64', got {self.dtype!r}")

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.regressor_tags.poor_score = True  # score is a log-likelihood, not R^2
        tags.non_deterministic = self.device != "cpu"
        return tags

    # -- fitting -------------------------------------------------------------------------------

    def fit(
        self,
        X: Any,
        y: Any,
        feature_names: Sequence[str] | None = None,
        target_names: Sequence[str] | None = None,
    ) -> ExplainableMixture:
        """Learn rules and components from ``X (n, d)`` and ``y (n,)`` or ``(n, d_y)``.

        Feature names default to a DataFrame's columns (``feature_names_in_``), else x0, x1...
        """
        import torch
        from sklearn.utils.validation import _check_feature_names

        self._validate()
        _check_feature_names(self, X, reset=True)
        if feature_names is None and hasattr(self, "feature_names_in_"):
            feature_names = [str(c) for c in self.feature_names_in_]
        if y is None:
            raise ValueError(
                "y: expected the targets; ExplainableMixture requires y to be passed, but the "
                "target y is None"
            )
        x = as_matrix("X", X, two_d=True)
        t = as_matrix("y", y)
        check_same_rows(x, t)
        if len(x) < 2 * self.n_rules:
            raise ValueError(
                f"X: expected at least 2 * n_rules = {2 * self.n_rules} rows, got "
                f"n_samples = {len(x)}"
            )
        self.feature_names_ = check_names("feature_names", feature_names, x.shape[1], "x")
        self.target_names_ = check_names("target_names", target_names, t.shape[1], "y")
        check_not_constant("X", x, self.feature_names_)
        check_not_constant("y", t, self.target_names_)
        self.n_features_in_ = x.shape[1]
        self.n_targets_ = t.shape[1]
        self._y_1d = np.asarray(y).ndim == 1
        self._x_range = np.stack([x.min(0), x.max(0)], axis=1)
        dt = torch.float64 if self.dtype == "float64" else torch.float32
        xt = torch.as_tensor(x, dtype=dt)
        yt = torch.as_tensor(t, dtype=dt)
        induced = self.components == "induced"
        model = _initial_model(x, t, self.n_rules, self.n_sub, int(self.seed), dt, induced)
        stages = int(self.prune_rounds) + 1
        per_stage = max(1, self.steps // stages)
        self.history_: list[dict[str, float]] = []
        for stage in range(stages):
            self._train(model, xt, yt, per_stage, stage * per_stage, per_stage * stages)
            if stage < stages - 1:
                tau = self._tau(stage, per_stage, stages)
                model.induce(xt, yt, tau)
                model = _prune_and_merge(model, xt, yt, tau, self)
        model.induce(xt, yt, self.tau_end)
        if self.bic_select:
            model = _select_by_bic(model, xt, yt, self.tau_end, self.merge_jaccard, self.bic_count)
            model = _simplify_by_bic(model, xt, yt, self.tau_end, self.bic_count)
            self._train(model, xt, yt, per_stage, per_stage * stages, per_stage * stages)
            model.induce(xt, yt, self.tau_end)
        _, share = _coverage(model, xt, self.tau_end)
        self.model_ = _subset(model, list(np.argsort(-share, kind="stable"))).eval()
        self.rules_ = self._rules(xt)
        return self

    def _tau(self, stage: int, per_stage: int, stages: int) -> float:
        return self._tau_at((stage + 1) * per_stage - 1, per_stage * stages)

    def _tau_at(self, step: int, total: int) -> float:
        """Geometric annealing ``tau_start -> tau_end`` over `total` steps (then ``tau_end``)."""
        frac = min(1.0, step / max(1, total - 1))
        return self.tau_start * (self.tau_end / self.tau_start) ** frac

    def _train(self, model: Any, x: Any, y: Any, steps: int, offset: int, total: int) -> None:
        import torch

        from shared_core.train import TrainConfig, fit, step_generator

        n = len(x)
        lam, gamma = self.lam, self.gamma

        def batch_fn(step: int) -> dict[str, Any]:
            tau = self._tau_at(offset + step, total)
            if n <= self.batch_size:
                return {"x": x, "y": y, "tau": tau}
            g = step_generator(self.seed, offset + step)
            idx = torch.randint(n, (self.batch_size,), generator=g)
            return {"x": x[idx], "y": y[idx], "tau": tau}

        def loss_fn(m: Any, batch: dict[str, Any]) -> tuple[Any, dict[str, float]]:
            return getattr(m, "module", m).objective(
                batch["x"], batch["y"], batch["tau"], lam, gamma
            )

        config = TrainConfig(
            steps=steps, lr=self.lr, schedule="constant", weight_decay=0.0, grad_clip=0.0
        )
        result = fit(
            model,
            loss_fn,
            batch_fn,
            config,
            desc=f"emm train k={model.k}",
            show_progress=self.show_progress,
            device=self.device,
        )
        model.to("cpu")
        self.history_.extend(result.history)

    # -- prediction ----------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(
            self, "model_", msg="this ExplainableMixture is not fitted yet: call fit(X, y) first"
        )

    def _tensors(self, X: Any, y: Any | None = None) -> tuple[Any, Any]:
        import torch

        self._check_fitted()
        dt = self.model_.alpha.dtype
        x = torch.as_tensor(as_matrix("X", X, columns=self.n_features_in_, two_d=True), dtype=dt)
        if y is None:
            return x, None
        t = as_matrix("y", y, columns=self.n_targets_)
        check_same_rows(x.numpy(), t)
        return x, torch.as_tensor(t, dtype=dt)

    def log_density(self, X: Any, y: Any) -> np.ndarray:
        """``log p(y | x)`` per row, ``(n,)`` (nats, in the units of y)."""
        import torch

        x, t = self._tensors(X, y)
        with torch.no_grad():
            return self.model_.log_density(x, t, self.tau_end).double().numpy()

    def score(self, X: Any, y: Any) -> float:
        """Mean ``log p(y | x)`` (higher is better, as scikit-learn's ``score``)."""
        return float(np.mean(self.log_density(X, y)))

    def weights(self, X: Any) -> np.ndarray:
        """``w_i(x)``, ``(n, k)``: which rule explains each row."""
        import torch

        x, _ = self._tensors(X)
        with torch.no_grad():
            return torch.exp(self.model_.log_weights(x, self.tau_end)).double().numpy()

    def marginal_weights(self, X: Any) -> np.ndarray:
        """Marginal EMM weights ``w_i = E[e_i(X)] / sum_l E[e_l(X)]`` over the rows of X, ``(k,)``."""
        import torch

        from explainable_mixtures.rules import marginal_weights

        x, _ = self._tensors(X)
        with torch.no_grad():
            return marginal_weights(self.model_.log_activation(x, self.tau_end)).double().numpy()

    def marginal_log_density(self, X: Any, y: Any) -> np.ndarray:
        """``log p(y) = log sum_i w_i p_i(y)`` with the marginal weights of the population X,
        for each row of y, ``(m,)``."""
        import torch

        w = torch.as_tensor(self.marginal_weights(X), dtype=self.model_.alpha.dtype)
        t = torch.as_tensor(as_matrix("y", y, columns=self.n_targets_), dtype=w.dtype)
        with torch.no_grad():
            log_p = self.model_.component_log_prob(t)
            return torch.logsumexp(torch.log(w) + log_p, dim=-1).double().numpy()

    def assign(self, X: Any) -> np.ndarray:
        """The rule with the largest weight for each row, ``(n,)`` int."""
        return self.weights(X).argmax(axis=1)

    def predict(self, X: Any) -> np.ndarray:
        """Predictive mean ``E[y | x] = sum_i w_i(x) E_i[y]``, ``(n, d_y)`` (``(n,)`` when
        `fit` was given a 1-D y, scikit-learn's convention)."""
        mean = self.weights(X) @ np.array([r.mean for r in self.rules_])
        return mean[:, 0] if self._y_1d else mean

    def n_parameters(self) -> int:
        """BIC's ``|Theta|`` under `bic_count`: with "rules" (the paper's), the number of
        thresholds in the printed rules (one per closed side of a condition)."""
        self._check_fitted()
        return _n_parameters(self.model_, self._span(), self.bic_count)

    def bic(self, X: Any, y: Any) -> float:
        """``2 * NLL + |Theta| log n`` on the given rows (`bic_count` sets ``|Theta|``)."""
        x, t = self._tensors(X, y)
        return _bic(self.model_, x, t, self.tau_end, self.bic_count, self._span())

    def _span(self) -> Any:
        """``(2, d)`` tensor: the training rows' feature minima and maxima (a threshold outside
        them is an open side)."""
        import torch

        return torch.as_tensor(self._x_range.T.copy(), dtype=self.model_.alpha.dtype)

    def describe(self) -> str:
        """The rules, one per line (``rule i`` is column ``i - 1`` of `weights`; rules are
        ordered by their share of the training rows)."""
        self._check_fitted()
        return "\n".join(f"rule {i + 1}: {r}" for i, r in enumerate(self.rules_))

    def _rules(self, x: Any) -> list[Rule]:
        import torch

        model = self.model_
        with torch.no_grad():
            share = torch.exp(model.log_weights(x, self.tau_end)).mean(0).double().numpy()
            used = _used_features(model, x)
            lo = (model.alpha * model.x_scale + model.x_loc).double().numpy()
            hi = (model.beta * model.x_scale + model.x_loc).double().numpy()
            mean, cov = _component_moments(model)
        rules = []
        for i in range(model.k):
            conds = tuple(
                Condition(
                    self.feature_names_[j],
                    float(lo[i, j]) if lo[i, j] > self._x_range[j, 0] else None,
                    float(hi[i, j]) if hi[i, j] < self._x_range[j, 1] else None,
                )
                for j in np.flatnonzero(used[i])
            )
            rules.append(
                Rule(
                    conds,
                    float(share[i]),
                    tuple(float(v) for v in mean[i]),
                    tuple(float(v) for v in np.sqrt(np.diag(cov[i]))),
                    tuple(self.target_names_),
                )
            )
        return rules


# -- the pieces of `fit` -----------------------------------------------------------------------


def _initial_model(
    x: np.ndarray, t: np.ndarray, k: int, n_sub: int, seed: int, dt: Any, induced: bool
) -> Any:
    """Rules and components anchored at k-means++ centres of the standardised ``(x, y)``."""
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


def _used_features(model: Any, x: Any) -> np.ndarray:
    """``(k, d)`` bool: the features a rule reads (weight >= 5 % of its largest, box cuts the data)."""
    import torch

    with torch.no_grad():
        a = model.feature_weights()
        z = (x - model.x_loc) / model.x_scale
        cuts = (model.alpha > z.min(0).values) | (model.beta < z.max(0).values)
        heavy = a >= FEATURE_USE * a.max(dim=1, keepdim=True).values
    return (heavy & cuts).numpy()


def _component_moments(model: Any) -> tuple[np.ndarray, np.ndarray]:
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


def _subset(model: Any, keep: Sequence[int]) -> Any:
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


def _hellinger(mean: np.ndarray, cov: np.ndarray, i: int, j: int) -> float:
    """Hellinger distance between the Gaussians with the moments of components i and j."""
    s = 0.5 * (cov[i] + cov[j])
    diff = mean[i] - mean[j]
    log_bc = (
        -0.125 * float(diff @ np.linalg.solve(s, diff))
        - 0.5 * np.linalg.slogdet(s)[1]
        + 0.25 * (np.linalg.slogdet(cov[i])[1] + np.linalg.slogdet(cov[j])[1])
    )
    return math.sqrt(max(0.0, 1.0 - math.exp(log_bc)))


def _coverage(model: Any, x: Any, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows each rule covers (``e_i(x) > 1/2``, ``(n, k)`` bool) and each rule's share."""
    import torch

    with torch.no_grad():
        log_e = model.log_activation(x, tau)
        share = torch.exp(log_e - torch.logsumexp(log_e, -1, keepdim=True)).mean(0)
        return (torch.exp(log_e) > 0.5).numpy(), share.double().numpy()


def _jaccard(covered: np.ndarray, i: int, j: int) -> float:
    union = np.logical_or(covered[:, i], covered[:, j]).sum()
    return float(np.logical_and(covered[:, i], covered[:, j]).sum() / union) if union else 0.0


def _containment(covered: np.ndarray, i: int, j: int) -> float:
    """Share of the smaller of the two rules' covered rows that the other also covers."""
    smaller = min(covered[:, i].sum(), covered[:, j].sum())
    return float(np.logical_and(covered[:, i], covered[:, j]).sum() / smaller) if smaller else 0.0


def _merge(model: Any, i: int, j: int, share: np.ndarray) -> Any:
    """Rule ``i`` absorbs rule ``j``: the hull of both boxes, the larger feature weights, and
    the moment-matched Gaussian of their two components (weighted by share)."""
    import torch

    merged = _subset(model, [r for r in range(model.k) if r != j])
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


def _prune_and_merge(model: Any, x: Any, y: Any, tau: float, est: ExplainableMixture) -> Any:
    """Drop dead rules, then merge redundant pairs; returns a new model (or the same)."""
    import torch

    covered, share = _coverage(model, x, tau)
    with torch.no_grad():
        a = model.feature_weights()
        used = (a >= FEATURE_USE * a.max(dim=1, keepdim=True).values).numpy()
        empty = ((model.alpha > model.beta).numpy() & used).any(1)
    alive = [i for i in range(model.k) if share[i] >= est.min_share and not empty[i]]
    if not alive:
        alive = [int(np.argmax(share))]
    if len(alive) < model.k:
        model = _subset(model, alive)
        model.induce(x, y, tau)
        covered, share = covered[:, alive], share[alive]
    while model.k > 1:
        mean, cov = _component_moments(model)
        pairs = [
            (i, j)
            for i in range(model.k)
            for j in range(model.k)
            if share[i] >= share[j]
            and i != j
            and _jaccard(covered, i, j) > est.merge_jaccard
            and _hellinger(mean, cov, i, j) < est.merge_hellinger
        ]
        if not pairs:
            break
        i, j = pairs[0]
        model = _merge(model, i, j, share)
        model.induce(x, y, tau)
        covered, share = _coverage(model, x, tau)
    return model


def _n_parameters(model: Any, x: Any, count: str) -> int:
    """BIC's ``|Theta|``: one per closed side of a used condition (the rule parameters, the
    paper's count; the weights ``a_ij`` only decide which conditions are used), plus with
    ``count="all"`` the components' parameters. The rows `x` give the data range."""
    import torch

    used = _used_features(model, x)
    with torch.no_grad():
        z = (x - model.x_loc) / model.x_scale
        low = (model.alpha > z.min(0).values).numpy()
        high = (model.beta < z.max(0).values).numpy()
    thresholds = int((used & low).sum() + (used & high).sum())
    return thresholds + (model.components.n_parameters() if count == "all" else 0)


def _bic(model: Any, x: Any, y: Any, tau: float, count: str, span: Any = None) -> float:
    """``2 NLL + |Theta| log n`` on the rows ``(x, y)``; `span` (default `x`) gives the range."""
    import torch

    with torch.no_grad():
        nll = -float(model.log_density(x, y, tau).double().sum())
    n_params = _n_parameters(model, x if span is None else span, count)
    return 2.0 * nll + n_params * math.log(len(x))


def _induced_bic(model: Any, x: Any, y: Any, tau: float, count: str) -> float:
    """BIC of a candidate rule set on the training rows, its components induced anew first
    (induced components are functions of the rules)."""
    model.induce(x, y, tau)
    return _bic(model, x, y, tau, count)


def _simplify_by_bic(model: Any, x: Any, y: Any, tau: float, count: str) -> Any:
    """Drop rule conditions while BIC falls: each pass scores opening every closed side of
    every used condition (moving its threshold far outside the data) and applies the ones
    that lower BIC, best first, each re-checked against the model as it then is."""
    import torch

    with torch.no_grad():
        z = (x - model.x_loc) / model.x_scale
        z_min, z_max = z.min(0).values - 10.0, z.max(0).values + 10.0
    best_bic = _induced_bic(model, x, y, tau, count)
    changed = True
    while changed:
        changed = False
        used = _used_features(model, x)
        sides = [
            (i, j, side)
            for i, j in zip(*np.nonzero(used), strict=True)
            for side in ("alpha", "beta")
        ]
        scored = []
        for i, j, side in sides:
            score = _induced_bic(_opened(model, i, j, side, z_min, z_max), x, y, tau, count)
            if score < best_bic:
                scored.append((score, i, j, side))
        for _, i, j, side in sorted(scored):
            candidate = _opened(model, i, j, side, z_min, z_max)
            score = _induced_bic(candidate, x, y, tau, count)
            if score < best_bic:
                model, best_bic, changed = candidate, score, True
    return model


def _opened(model: Any, i: int, j: int, side: str, z_min: Any, z_max: Any) -> Any:
    """A copy of `model` with the `side` threshold of rule i on feature j opened."""
    import torch

    out = _subset(model, list(range(model.k)))
    with torch.no_grad():
        if side == "alpha":
            out.alpha[i, j] = z_min[j]
        else:
            out.beta[i, j] = z_max[j]
    return out


def _select_by_bic(model: Any, x: Any, y: Any, tau: float, merge_jaccard: float, count: str) -> Any:
    """Greedy BIC descent over the rule set: at each step take the candidate with the lowest
    BIC among dropping one rule and merging two rules one of which mostly lies inside the
    other (`_containment` of their covered rows above `merge_jaccard`, components
    moment-matched); stop when none lowers BIC."""
    best, best_bic = model, _induced_bic(model, x, y, tau, count)
    while best.k > 1:
        covered, share = _coverage(best, x, tau)
        candidates = [_subset(best, [r for r in range(best.k) if r != i]) for i in range(best.k)]
        candidates += [
            _merge(best, i, j, share)
            for i in range(best.k)
            for j in range(i + 1, best.k)
            if _containment(covered, i, j) > merge_jaccard
        ]
        scores = [_induced_bic(c, x, y, tau, count) for c in candidates]
        i = int(np.argmin(scores))
        if scores[i] >= best_bic:
            break
        best, best_bic = candidates[i], scores[i]
    return best
