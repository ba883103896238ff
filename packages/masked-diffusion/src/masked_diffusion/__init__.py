"""Masked (absorbing-state) discrete diffusion: MDLM (Sahoo et al., 2024) as a reusable baseline."""

from masked_diffusion.backbone import (
    BackboneConfig,
    MaskedDiffusionTransformer,
    apply_rotary,
    rotary_angles,
    timestep_embedding,
)
from masked_diffusion.data import TokenData, digits_grid, shakespeare_chars
from masked_diffusion.forward import check_tokens, q_xt, sample_t
from masked_diffusion.loss import (
    Denoiser,
    LossOutput,
    check_logits,
    mdlm_loss,
    nelbo,
    nelbo_terms,
    subs_log_probs,
)
from masked_diffusion.sampling import (
    ancestral_sample,
    confidence_sample,
    gumbel_argmax,
    halton_order,
    ordered_sample,
    random_order,
    reveal_counts,
    time_grid,
)
from masked_diffusion.schedule import (
    CosineSchedule,
    LogLinearSchedule,
    Schedule,
    get_schedule,
)
from masked_diffusion.train import TrainConfig, TrainResult, step_generator, train

__version__ = "0.1.0"

__all__ = [
    "BackboneConfig",
    "CosineSchedule",
    "Denoiser",
    "LogLinearSchedule",
    "LossOutput",
    "MaskedDiffusionTransformer",
    "Schedule",
    "TokenData",
    "TrainConfig",
    "TrainResult",
    "ancestral_sample",
    "apply_rotary",
    "check_logits",
    "check_tokens",
    "confidence_sample",
    "digits_grid",
    "get_schedule",
    "gumbel_argmax",
    "halton_order",
    "mdlm_loss",
    "nelbo",
    "nelbo_terms",
    "ordered_sample",
    "q_xt",
    "random_order",
    "reveal_counts",
    "rotary_angles",
    "sample_t",
    "shakespeare_chars",
    "step_generator",
    "subs_log_probs",
    "time_grid",
    "timestep_embedding",
    "train",
]
