"""VADD sampling (paper Algorithm 2): ``z ~ N(0, I)`` afresh at every step, then the MDM update.

The latent enters only through the denoiser closure `VADD.prior_denoiser`; the update itself is
`masked_diffusion.ancestral_sample` (or any other `masked_diffusion` sampler). The recognition
model is not used, so a step costs one decoder call, as for the MDM.
"""

from __future__ import annotations

import torch
from masked_diffusion import Schedule, ancestral_sample


@torch.no_grad()
def sample(
    model,
    *,
    steps: int,
    batch_size: int = 1,
    latent: str = "step",
    schedule: Schedule | None = None,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    x_init: torch.Tensor | None = None,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """Draw (batch, L) sequences from a `vadd.VADD` with `steps` ancestral steps.

    latent: ``"step"`` (paper: one z per denoising step) or ``"sample"`` (one z per sequence).
    With ``latent_dim = 0`` this is exactly `masked_diffusion.ancestral_sample` of the decoder.
    """
    was = model.training
    model.eval()
    try:
        return ancestral_sample(
            model.prior_denoiser(generator, latent=latent),
            vocab_size=model.vocab_size,
            steps=steps,
            batch_size=batch_size,
            seq_len=model.cfg.seq_len,
            schedule=schedule,
            temperature=temperature,
            generator=generator,
            x_init=x_init,
            device=device,
        )
    finally:
        model.train(was)
