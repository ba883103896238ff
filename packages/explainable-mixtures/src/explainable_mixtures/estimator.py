"""`ExplainableMixture`: fit an explainable mixture model (EMM) like a scikit-learn estimator.

This module is the scikit-learn surface: the hyper-parameters and their checks, ``fit`` (input
checks, then `explainable_mixtures.schedule.learn`, the paper's Sec. 4 procedure) and the
fitted model's queries. The rest lives where it belongs: the rule parameterisation (anchoring,
readable `Rule`s) in `explainable_mixtures.parameterisation`, the training schedule in
`explainable_mixtures.schedule`, pruning, merging and BIC selection in
`explainable_mixtures.selection`.
"""

from __future__ import annotations

from collections.abc import Sequence
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
from explainable_mixtures.parameterisation import Condition, Rule, read_rules

__all__ = ["BIC_COUNTS", "LAM", "Condition", "ExplainableMixture", "Rule"]

LAM = 0.1  # overlap weight: see the README's lambda ablation for the choice
BIC_COUNTS = ("rules", "all")


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

    def _validate(self) -> None:
        """Check the hyper-parameters, at the start of `fit`: `__init__` and `set_params` store
        them as given (scikit-learn's convention, which `check_estimator` tests)."""
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

        from explainable_mixtures.schedule import Schedule, learn

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
        self.model_, self.history_ = learn(x, t, Schedule.from_params(self.get_params()), dt)
        self.rules_ = read_rules(
            self.model_,
            torch.as_tensor(x, dtype=dt),
            self.tau_end,
            self.feature_names_,
            self.target_names_,
            self._x_range,
        )
        return self

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
        from explainable_mixtures.selection import n_parameters

        self._check_fitted()
        return n_parameters(self.model_, self._span(), self.bic_count)

    def bic(self, X: Any, y: Any) -> float:
        """``2 * NLL + |Theta| log n`` on the given rows (`bic_count` sets ``|Theta|``)."""
        from explainable_mixtures.selection import bic

        x, t = self._tensors(X, y)
        return bic(self.model_, x, t, self.tau_end, self.bic_count, self._span())

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
