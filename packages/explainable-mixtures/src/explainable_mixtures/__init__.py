"""Explainable mixture models: mixture components paired with readable box rules (ICLR 2026).

``ExplainableMixture`` is the scikit-learn-style estimator; `RuleMixture` the torch module it
trains; `explainable_mixtures.rules` the differentiable rules; `explainable_mixtures.baselines`
the comparisons (Gaussian mixture, decision tree with Gaussian leaves, mixture density network).
"""

from explainable_mixtures.estimator import Condition, ExplainableMixture, Rule

__all__ = ["Condition", "ExplainableMixture", "Rule"]
