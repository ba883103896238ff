"""VADD: Variational Autoencoding Discrete Diffusion (Xie et al., ICLR 2026, arXiv:2505.17384).

A masked diffusion model whose denoiser is conditioned on a Gaussian latent z drawn afresh at
every denoising step, with a recognition model ``r_phi(z | x0, x_t, t)``, trained with the
paper's DELBO; built on the `masked_diffusion` package (forward process, ELBO weights,
samplers, backbone, training loop).
"""

from vadd.data import checkerboard, empirical_table, gaussian_mixture, sample_table
from vadd.likelihood import (
    entropy,
    exact_sample_distribution,
    iw_log_likelihood,
    kl_divergence,
    latent_quadrature,
    paper_delbo,
    total_variation,
    valid_bound,
)
from vadd.loss import (
    OBJECTIVES,
    VADDLossOutput,
    gaussian_kl,
    gaussian_log_prob,
    kl_weight,
    vadd_loss,
)
from vadd.model import VADD, Recognition, VADDConfig
from vadd.paths import reveal_step_probs, still_masked_probs, unmask_probs
from vadd.sampling import sample
from vadd.train import ObjectiveConfig, train_vadd

__version__ = "0.1.0"

__all__ = [
    "OBJECTIVES",
    "VADD",
    "ObjectiveConfig",
    "Recognition",
    "VADDConfig",
    "VADDLossOutput",
    "__version__",
    "checkerboard",
    "empirical_table",
    "entropy",
    "exact_sample_distribution",
    "gaussian_kl",
    "gaussian_log_prob",
    "gaussian_mixture",
    "iw_log_likelihood",
    "kl_divergence",
    "kl_weight",
    "latent_quadrature",
    "paper_delbo",
    "reveal_step_probs",
    "sample",
    "sample_table",
    "still_masked_probs",
    "total_variation",
    "train_vadd",
    "unmask_probs",
    "vadd_loss",
    "valid_bound",
]
