"""The local densities ``p_i(y)`` of the mixture: a small Gaussian mixture per rule.

Each rule ``i`` owns ``S`` full-covariance Gaussians (``S = 1``, one Gaussian per rule, is the
default and the paper's GMM setting); covariances are parameterised by a Cholesky factor with a
positive diagonal, so every parameter value is a valid density.

Two ways to set them (``ExplainableMixture(components=...)``):

- ``"induced"`` (the paper's, Sec. 3 of the note: "the conditional distribution induced by the
  samples satisfying the rule"): `induced_moments` gives each rule's Gaussian as the weighted
  mean and covariance of the rows, each row weighted by the rule's soft activation
  ``e_i(x)``; these moments are functions of the rule parameters, so the gradient of the NLL
  reaches the rules through them too, and they are not free parameters.
- ``"free"`` (ours, 0.1.0): the means and Cholesky factors are free parameters trained with
  the rules.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class GaussianComponents(nn.Module):
    """``k`` rule components, each a mixture of ``S`` Gaussians in ``d_y`` dimensions.

    Args:
        means: ``(k, S, d_y)`` initial means.
        covariances: ``(k, S, d_y, d_y)`` initial (positive definite) covariances.
    """

    def __init__(self, means: torch.Tensor, covariances: torch.Tensor) -> None:
        super().__init__()
        chol = torch.linalg.cholesky(covariances)
        self.mu = nn.Parameter(means.clone())
        self.log_diag = nn.Parameter(torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).clone())
        self.lower = nn.Parameter(torch.tril(chol, diagonal=-1).clone())
        self.sub_logits = nn.Parameter(torch.zeros(means.shape[:2], dtype=means.dtype))

    @property
    def k(self) -> int:
        return int(self.mu.shape[0])

    def cholesky(self) -> torch.Tensor:
        """``(k, S, d_y, d_y)`` lower-triangular factors ``L`` with ``Sigma = L L^T``."""
        return torch.tril(self.lower, diagonal=-1) + torch.diag_embed(torch.exp(self.log_diag))

    def covariance(self) -> torch.Tensor:
        L = self.cholesky()
        return L @ L.transpose(-1, -2)

    def log_prob(self, y: torch.Tensor) -> torch.Tensor:
        """``log p_i(y)`` for every point and rule: ``(n, d_y) -> (n, k)``."""
        log_n = gaussian_log_prob(y, self.mu, self.cholesky())  # (n, k, S)
        return torch.logsumexp(torch.log_softmax(self.sub_logits, dim=-1) + log_n, dim=-1)

    @torch.no_grad()
    def set_moments(self, mean: torch.Tensor, covariance: torch.Tensor) -> None:
        """Set one Gaussian per rule (``S = 1``): ``mean (k, d_y)``, ``covariance (k, d_y, d_y)``."""
        chol = torch.linalg.cholesky(covariance)
        self.mu.copy_(mean[:, None])
        self.log_diag.copy_(torch.log(torch.diagonal(chol, dim1=-2, dim2=-1))[:, None])
        self.lower.copy_(torch.tril(chol, diagonal=-1)[:, None])
        self.sub_logits.zero_()

    def n_parameters(self) -> int:
        """Free parameters per the BIC: means, covariances and within-rule mixing weights."""
        k, s, d = self.mu.shape
        return k * (s * (d + d * (d + 1) // 2) + (s - 1))


PRIOR_ROWS = 1.0  # pseudo-rows at the global mean with unit covariance (standard units)
COV_FLOOR = 1e-4  # added to each induced covariance's diagonal (standard units)


def gaussian_log_prob(y: torch.Tensor, mu: torch.Tensor, L: torch.Tensor) -> torch.Tensor:
    """``log N(y; mu, L L^T)`` for ``y (n, d)``, ``mu (*b, d)``, ``L (*b, d, d)``: ``(n, *b)``."""
    d = y.shape[-1]
    batch = mu.shape[:-1]
    mu_f, L_f = mu.reshape(-1, d), L.reshape(-1, d, d)  # (B, d), (B, d, d)
    eye = torch.eye(d, dtype=L.dtype, device=L.device).expand_as(L_f)
    L_inv = torch.linalg.solve_triangular(L_f, eye, upper=False)
    white = torch.einsum("bij,nbj->nbi", L_inv, y[:, None, :] - mu_f)  # L^{-1} (y - mu)
    log_det = torch.log(torch.diagonal(L_f, dim1=-2, dim2=-1)).sum(-1)  # (B,)
    log_n = -0.5 * (white**2).sum(-1) - log_det - 0.5 * d * math.log(2.0 * math.pi)
    return log_n.reshape(y.shape[0], *batch)


def induced_moments(log_e: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each rule's Gaussian fitted to the rows it (soft-)covers: weights ``e_i(x_l)``.

    ``mu_i = sum_l e_il u_l / (sum_l e_il + n0)``, ``Sigma_i = (sum_l e_il (u_l - mu_i)
    (u_l - mu_i)^T + n0 I) / (sum_l e_il + n0) + floor I`` with ``n0 = PRIOR_ROWS`` pseudo-rows
    at the standardised targets' mean 0 with unit covariance (ours: keeps a rule that covers no
    row a proper density) and a small diagonal floor.

    Args:
        log_e: ``(n, k)`` log rule activations.
        u: ``(n, d_y)`` standardised targets.

    Returns:
        ``mean (k, d_y)`` and ``covariance (k, d_y, d_y)``; differentiable in `log_e`.
    """
    e = torch.exp(log_e)  # (n, k)
    mass = e.sum(0) + PRIOR_ROWS  # (k,)
    mean = (e.T @ u) / mass[:, None]  # (k, d_y)
    dev = u[:, None, :] - mean  # (n, k, d_y)
    scatter = torch.einsum("nk,nki,nkj->kij", e, dev, dev)
    eye = torch.eye(u.shape[-1], dtype=u.dtype, device=u.device)
    prior = PRIOR_ROWS * (eye + mean[:, :, None] * mean[:, None, :])  # pseudo-rows at 0
    cov = (scatter + prior) / mass[:, None, None] + COV_FLOOR * eye
    return mean, cov
