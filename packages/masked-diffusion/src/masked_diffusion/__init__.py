"""Masked (absorbing-state) discrete diffusion: MDLM (Sahoo et al., 2024) as a reusable baseline.

Names are imported lazily (PEP 562), so ``import masked_diffusion`` and the console script's
``--help`` do not pay for torch until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "BackboneConfig": "backbone",
    "MaskedDiffusionTransformer": "backbone",
    "PreNormBlock": "backbone",
    "TransformerSize": "backbone",
    "feed_forward": "backbone",
    "apply_rotary": "backbone",
    "rotary_angles": "backbone",
    "timestep_embedding": "backbone",
    "TokenData": "data",
    "TokenSpec": "corpus",
    "MDLM": "pretrained",
    "MDLMConfig": "pretrained",
    "digits_grid": "data",
    "noise_generator": "data",
    "require_shakespeare": "data",
    "row_batches": "data",
    "shakespeare_chars": "data",
    "CausalCharLM": "evaluation",
    "CharLMConfig": "evaluation",
    "evaluator_loss_fn": "evaluation",
    "generative_nll": "evaluation",
    "sequence_entropy": "evaluation",
    "check_tokens": "forward",
    "q_xt": "forward",
    "sample_t": "forward",
    "Denoiser": "loss",
    "LossOutput": "loss",
    "NELBOEstimate": "loss",
    "check_logits": "loss",
    "check_times": "forward",
    "mdlm_loss": "loss",
    "mdlm_loss_fn": "loss",
    "mdlm_train_config": "loss",
    "nelbo": "loss",
    "nelbo_terms": "loss",
    "subs_log_probs": "loss",
    "ancestral_sample": "sampling",
    "confidence_sample": "sampling",
    "gumbel_argmax": "sampling",
    "halton_order": "sampling",
    "ordered_sample": "sampling",
    "random_order": "sampling",
    "reveal_counts": "sampling",
    "time_grid": "sampling",
    "UnmaskProb": "sampling",
    "CosineSchedule": "schedule",
    "LogLinearSchedule": "schedule",
    "Schedule": "schedule",
    "get_schedule": "schedule",
}

__all__ = [
    "MDLM",
    "BackboneConfig",
    "CausalCharLM",
    "CharLMConfig",
    "CosineSchedule",
    "Denoiser",
    "LogLinearSchedule",
    "LossOutput",
    "MDLMConfig",
    "MaskedDiffusionTransformer",
    "NELBOEstimate",
    "PreNormBlock",
    "Schedule",
    "TokenData",
    "TokenSpec",
    "TransformerSize",
    "UnmaskProb",
    "ancestral_sample",
    "apply_rotary",
    "check_logits",
    "check_times",
    "check_tokens",
    "confidence_sample",
    "digits_grid",
    "evaluator_loss_fn",
    "feed_forward",
    "generative_nll",
    "get_schedule",
    "gumbel_argmax",
    "halton_order",
    "mdlm_loss",
    "mdlm_loss_fn",
    "mdlm_train_config",
    "nelbo",
    "nelbo_terms",
    "noise_generator",
    "ordered_sample",
    "q_xt",
    "random_order",
    "require_shakespeare",
    "reveal_counts",
    "rotary_angles",
    "row_batches",
    "sample_t",
    "sequence_entropy",
    "shakespeare_chars",
    "subs_log_probs",
    "time_grid",
    "timestep_embedding",
]

if TYPE_CHECKING:
    from masked_diffusion.backbone import (
        BackboneConfig,
        MaskedDiffusionTransformer,
        PreNormBlock,
        TransformerSize,
        apply_rotary,
        feed_forward,
        rotary_angles,
        timestep_embedding,
    )
    from masked_diffusion.corpus import TokenSpec
    from masked_diffusion.data import (
        TokenData,
        digits_grid,
        noise_generator,
        require_shakespeare,
        row_batches,
        shakespeare_chars,
    )
    from masked_diffusion.evaluation import (
        CausalCharLM,
        CharLMConfig,
        evaluator_loss_fn,
        generative_nll,
        sequence_entropy,
    )
    from masked_diffusion.forward import check_times, check_tokens, q_xt, sample_t
    from masked_diffusion.loss import (
        Denoiser,
        LossOutput,
        NELBOEstimate,
        check_logits,
        mdlm_loss,
        mdlm_loss_fn,
        mdlm_train_config,
        nelbo,
        nelbo_terms,
        subs_log_probs,
    )
    from masked_diffusion.pretrained import MDLM, MDLMConfig
    from masked_diffusion.sampling import (
        UnmaskProb,
        ancestral_sample,
        confidence_sample,
        gumbel_argmax,
        halton_order,
        ordered_sample,
        random_order,
        reveal_counts,
        time_grid,
    )
    from masked_diffusion.schedule import CosineSchedule, LogLinearSchedule, Schedule, get_schedule


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
