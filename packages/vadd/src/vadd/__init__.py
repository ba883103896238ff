"""VADD: Variational Autoencoding Discrete Diffusion (Xie et al., ICLR 2026, arXiv:2505.17384).

A masked diffusion model whose denoiser is conditioned on a Gaussian latent z drawn afresh at
every denoising step, with a recognition model ``r_phi(z | x0, x_t, t)``, trained with the
paper's DELBO; built on the `masked_diffusion` package (forward process, ELBO weights,
samplers, backbone, batches); training goes through `shared_core.train.fit`. Text samples are
scored by generative perplexity and entropy under a small causal evaluator
(`masked_diffusion.CausalCharLM`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "checkerboard": "data",
    "empirical_table": "data",
    "gaussian_mixture": "data",
    "sample_table": "data",
    "check_distribution": "likelihood",
    "entropy": "likelihood",
    "exact_sample_distribution": "likelihood",
    "iw_log_likelihood": "likelihood",
    "sobol_normal": "likelihood",
    "gauss_hermite": "likelihood",
    "kl_divergence": "likelihood",
    "latent_quadrature": "likelihood",
    "paper_delbo": "likelihood",
    "total_variation": "likelihood",
    "valid_bound": "likelihood",
    "OBJECTIVES": "loss",
    "VADDLossOutput": "loss",
    "gaussian_kl": "loss",
    "gaussian_log_prob": "loss",
    "kl_weight": "loss",
    "vadd_loss": "loss",
    "VADD": "model",
    "Recognition": "model",
    "VADDConfig": "model",
    "VADDModel": "pretrained",
    "VADDModelConfig": "pretrained",
    "reveal_step_probs": "paths",
    "still_masked_probs": "paths",
    "unmask_probs": "paths",
    "sample": "sampling",
    "ObjectiveConfig": "train",
    "vadd_loss_fn": "train",
}

__all__ = [
    "OBJECTIVES",
    "VADD",
    "ObjectiveConfig",
    "Recognition",
    "VADDConfig",
    "VADDLossOutput",
    "VADDModel",
    "VADDModelConfig",
    "check_distribution",
    "checkerboard",
    "empirical_table",
    "entropy",
    "exact_sample_distribution",
    "gauss_hermite",
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
    "sobol_normal",
    "still_masked_probs",
    "total_variation",
    "unmask_probs",
    "vadd_loss",
    "vadd_loss_fn",
    "valid_bound",
]

if TYPE_CHECKING:
    from vadd.data import (
        checkerboard,
        empirical_table,
        gaussian_mixture,
        sample_table,
    )
    from vadd.likelihood import (
        check_distribution,
        entropy,
        exact_sample_distribution,
        gauss_hermite,
        iw_log_likelihood,
        kl_divergence,
        latent_quadrature,
        paper_delbo,
        sobol_normal,
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
    from vadd.model import (
        VADD,
        Recognition,
        VADDConfig,
    )
    from vadd.paths import (
        reveal_step_probs,
        still_masked_probs,
        unmask_probs,
    )
    from vadd.pretrained import VADDModel, VADDModelConfig
    from vadd.sampling import (
        sample,
    )
    from vadd.train import (
        ObjectiveConfig,
        vadd_loss_fn,
    )


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
