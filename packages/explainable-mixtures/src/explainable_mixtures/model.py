"""`RuleMixture`: the explainable mixture model as a torch module (Sec. 3-4 of the paper).

    p(y | x) = sum_i w_i(x) p_i(y),    w_i(x) = e_i(x) / sum_l e_l(x)

with soft box rules ``e_i`` (`explainable_mixtures.rules`) and Gaussian-mixture components
(`explainable_mixtures.components`). Features and targets are standardised inside the module
(buffers ``x_loc, x_scale, y_loc, y_scale``): thresholds are stored in standard units, so one
learning rate and one temperature fit every feature, and `log_density` is in the user's units
(the Jacobian ``-sum log y_scale`` is added).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from explainable_mixtures.components import GaussianComponents, gaussian_log_prob, induced_moments
from explainable_mixtures.rules import (
    coverage_penalty,
    log_conditional_weights,
    log_rule_activation,
    log_soft_condition,
    overlap_penalty,
)


def _inverse_softplus(a: torch.Tensor) -> torch.Tensor:
    return a + torch.log(-torch.expm1(-a))


class RuleMixture(nn.Module):
    """``k`` rules over ``d`` features, each paired with a component density over ``d_y`` targets.

    Args:
        alpha, beta: ``(k, d)`` initial lower/upper thresholds in standard units.
        feature_weights: ``(k, d)`` initial ``a_ij > 0``.
        components: the ``k`` component densities (in standard target units).
        x_loc, x_scale: ``(d,)`` feature standardisation; y_loc, y_scale: ``(d_y,)``.
        induced: the components are induced by the rows each rule covers (the paper's: during
            training `objective` recomputes them from the batch, `induce` freezes them for
            prediction); False: `components` are free parameters trained with the rules.
    """

    x_loc: torch.Tensor
    x_scale: torch.Tensor
    y_loc: torch.Tensor
    y_scale: torch.Tensor

    def __init__(
        self,
        alpha: torch.Tensor,
        beta: torch.Tensor,
        feature_weights: torch.Tensor,
        components: GaussianComponents,
        x_loc: torch.Tensor,
        x_scale: torch.Tensor,
        y_loc: torch.Tensor,
        y_scale: torch.Tensor,
        induced: bool = False,
    ) -> None:
        super().__init__()
        self.induced = induced
        self.alpha = nn.Parameter(alpha.clone())
        self.beta = nn.Parameter(beta.clone())
        self.a_raw = nn.Parameter(_inverse_softplus(feature_weights))
        self.components = components
        self.register_buffer("x_loc", x_loc.clone())
        self.register_buffer("x_scale", x_scale.clone())
        self.register_buffer("y_loc", y_loc.clone())
        self.register_buffer("y_scale", y_scale.clone())

    @property
    def k(self) -> int:
        return int(self.alpha.shape[0])

    def feature_weights(self) -> torch.Tensor:
        """``a_ij = softplus(raw) > 0``, ``(k, d)``."""
        return F.softplus(self.a_raw)

    def log_activation(self, x: torch.Tensor, tau: float) -> torch.Tensor:
        """``log e_i(x)`` for ``(n, d)`` features in user units: ``(n, k)``."""
        z = (x - self.x_loc) / self.x_scale
        return log_rule_activation(
            log_soft_condition(z, self.alpha, self.beta, tau), self.feature_weights()
        )

    def log_weights(self, x: torch.Tensor, tau: float) -> torch.Tensor:
        """``log w_i(x)``, ``(n, k)``."""
        return log_conditional_weights(self.log_activation(x, tau))

    def component_log_prob(self, y: torch.Tensor) -> torch.Tensor:
        """``log p_i(y)`` in user units, ``(n, d_y) -> (n, k)``."""
        u = (y - self.y_loc) / self.y_scale
        return self.components.log_prob(u) - torch.log(self.y_scale).sum()

    def log_density(self, x: torch.Tensor, y: torch.Tensor, tau: float) -> torch.Tensor:
        """``log p(y | x)``, ``(n,)``."""
        return torch.logsumexp(self.log_weights(x, tau) + self.component_log_prob(y), dim=-1)

    @torch.no_grad()
    def induce(self, x: torch.Tensor, y: torch.Tensor, tau: float) -> None:
        """Set each component to the Gaussian induced by the rows ``(x, y)`` its rule covers
        at temperature `tau` (`induced_moments`); a no-op for free components."""
        if self.induced:
            u = (y - self.y_loc) / self.y_scale
            self.components.set_moments(*induced_moments(self.log_activation(x, tau), u))

    def _training_log_prob(self, log_e: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``log p_i(y)`` ``(n, k)`` in training: induced from the batch, or the free components."""
        if not self.induced:
            return self.component_log_prob(y)
        u = (y - self.y_loc) / self.y_scale
        mean, cov = induced_moments(log_e, u)
        log_p = gaussian_log_prob(u, mean, torch.linalg.cholesky(cov))
        return log_p - torch.log(self.y_scale).sum()

    def objective(
        self, x: torch.Tensor, y: torch.Tensor, tau: float, lam: float, gamma: float
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """Training loss ``mean NLL + lam * R (+ gamma * C)`` (the note's ``NLL + lambda R``
        plus our optional coverage term), with its parts for the log."""
        log_e = self.log_activation(x, tau)
        log_w = log_conditional_weights(log_e)
        nll = -torch.logsumexp(log_w + self._training_log_prob(log_e, y), dim=-1).mean()
        R = overlap_penalty(log_w)
        C = coverage_penalty(log_e)
        parts = {"nll": nll.item(), "overlap": R.item(), "coverage": C.item()}
        return nll + lam * R + gamma * C, parts
