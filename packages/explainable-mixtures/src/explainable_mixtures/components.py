"""The local densities ``p_i(y)`` of the mixture: a small Gaussian mixture per rule.

Each rule ``i`` owns ``S`` full-covariance Gaussians (``S = 1``, one Gaussian per rule, is the
default and the paper's GMM setting); covariances are parameterised by a Cholesky factor with a
positive diagonal, so every parameter value is a valid density.
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
        L = self.cholesky()  # (k, S, d, d)
        diff = y[:, None, None, :] - self.mu  # (n, k, S, d)
        eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand_as(L)
        L_inv = torch.linalg.solve_triangular(L, eye, upper=False)
        white = torch.einsum("ksij,nksj->nksi", L_inv, diff)  # L^{-1} (y - mu)
        d = y.shape[-1]
        log_n = (
            -0.5 * (white**2).sum(-1) - self.log_diag.sum(-1) - 0.5 * d * math.log(2.0 * math.pi)
        )  # (n, k, S)
        return torch.logsumexp(torch.log_softmax(self.sub_logits, dim=-1) + log_n, dim=-1)

    def n_parameters(self) -> int:
        """Free parameters per the BIC: means, covariances and within-rule mixing weights."""
        k, s, d = self.mu.shape
        return k * (s * (d + d * (d + 1) // 2) + (s - 1))
