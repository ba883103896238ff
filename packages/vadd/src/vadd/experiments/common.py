"""What every experiment does first: train an MDM and a VADD of the same decoder on the same data."""

from __future__ import annotations

from typing import Any

import torch
from masked_diffusion import mdlm_train_config, row_batches

from shared_core.train import fit
from vadd.model import VADD, VADDConfig
from vadd.train import ObjectiveConfig, vadd_loss_fn


def train_mdm_and_vadd(
    data: torch.Tensor,
    vocab_size: int,
    cfg: Any,
    *,
    seed: int,
    device: str,
    show_progress: bool = True,
    task: str = "",
    **model_options: Any,
) -> dict[str, VADD]:
    """``{"MDM": latent_dim 0, "VADD": cfg.latent_dim}``, same init seed, batches and optimiser.

    `cfg` supplies latent_dim, d_model, n_layers, train_steps, batch_size, lr, anneal_steps;
    `model_options` go to `VADDConfig` (e.g. ``n_heads``, ``grid``).
    """
    models = {}
    for name, d in (("MDM", 0), ("VADD", cfg.latent_dim)):
        torch.manual_seed(seed)
        model = VADD(
            VADDConfig(
                vocab_size,
                data.shape[1],
                latent_dim=d,
                d_model=cfg.d_model,
                n_layers=cfg.n_layers,
                latent_hidden=cfg.d_model,
                **model_options,
            )
        )
        fit(
            model, vadd_loss_fn(ObjectiveConfig(anneal_steps=cfg.anneal_steps)),
            row_batches(data, cfg.batch_size, seed),
            mdlm_train_config(cfg.train_steps, lr=cfg.lr, warmup=20),
            desc=f"{name.lower()} train ({task})", show_progress=show_progress, device=device,
        )  # fmt: skip
        models[name] = model.cpu().eval()
    return models
