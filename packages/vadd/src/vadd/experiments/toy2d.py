"""Finding (1) of the paper at laptop scale: few-step sampling on a discretised 2-D toy.

An MDM (latent off) and a VADD with the same decoder are trained on the same batches of a
checkerboard (each coordinate one token of `bins` categories). The exact distribution of the
T-step sampler (`vadd.exact_sample_distribution`, the z integral by scrambled Sobol points,
replicated for a standard error) is compared with the truth by total
variation and KL; samples are drawn for scatter plots.
"""

from __future__ import annotations

import torch

from vadd.data import checkerboard, sample_table
from vadd.experiments.common import train_mdm_and_vadd
from vadd.experiments.scales import Toy2DConfig
from vadd.likelihood import entropy, exact_sample_distribution, kl_divergence, total_variation
from vadd.model import VADD
from vadd.sampling import sample


def train_pair(cfg: Toy2DConfig, seed: int, device: str, show_progress: bool = True):
    """Train the MDM (d = 0) and VADD (d = cfg.latent_dim) on the same data; return both."""
    P = checkerboard(cfg.bins, cfg.cells)
    data = sample_table(P, cfg.train_rows, torch.Generator().manual_seed(seed))
    models = train_mdm_and_vadd(
        data,
        cfg.bins,
        cfg,
        seed=seed,
        device=device,
        show_progress=show_progress,
        task="toy 2-D",
        n_heads=2,
    )
    return P, models


def evaluate(P: torch.Tensor, models: dict[str, VADD], cfg: Toy2DConfig, seed: int):
    """Rows ``{model, steps, tv, kl}`` of the exact sampler distributions, and scatter samples."""
    rows, samples = [], {}
    for name, model in models.items():
        for T in cfg.steps:
            # `quad_reps` independent scrambled-Sobol replicates of the z integral: the table is
            # their mean, tv_se the standard error of the replicates' TVs (0 for the MDM)
            reps = [
                exact_sample_distribution(
                    model, T, quadrature="sobol", n_latent=cfg.n_latent, seed=seed * 101 + r
                )
                for r in range(cfg.quad_reps if model.latent_dim > 0 else 1)
            ]
            Q = torch.stack(reps).mean(dim=0)
            tvs = torch.tensor([total_variation(P, q) for q in reps], dtype=torch.float64)
            se = float(tvs.std() / len(reps) ** 0.5) if len(reps) > 1 else 0.0
            rows.append(
                {
                    "model": name,
                    "steps": T,
                    "tv": total_variation(P, Q),
                    "tv_se": se,
                    "kl_data_to_model": kl_divergence(P, Q),
                    "mass_on_support": float(Q[P > 0].sum()),
                }
            )
            g = torch.Generator().manual_seed(seed + T)
            samples[(name, T)] = sample(model, steps=T, batch_size=cfg.n_scatter, generator=g)
    return rows, samples, entropy(P)
