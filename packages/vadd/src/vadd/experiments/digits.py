"""Finding (2) at laptop scale: pixel-level 8x8 digits (binarised), VADD vs the MDM.

Both models share decoder size, data and batches. Reported per number of sampling steps T:
the valid T-step NLL bound in bits/dim (`vadd.valid_bound`) on test images, and two sample
statistics against the test images: the mean absolute error of the 64 pixel means and of the
64 x 64 pixel-pair correlations. The second is what few-step MDM sampling gets wrong: pixels
revealed in the same step are drawn independently.
"""

from __future__ import annotations

import math

import torch
from masked_diffusion import digits_grid

from vadd.experiments.common import train_mdm_and_vadd
from vadd.experiments.scales import DigitsConfig
from vadd.likelihood import valid_bound
from vadd.sampling import sample


def pixel_statistics_error(samples: torch.Tensor, reference: torch.Tensor) -> tuple[float, float]:
    """``(mean abs error of pixel means, mean abs error of pixel-pair correlations)``.

    Constant pixels (zero variance in either set) have correlation 0 by convention.
    """
    if samples.ndim != 2 or samples.shape[1] != reference.shape[1]:
        raise ValueError(
            f"samples: expected shape (n, {reference.shape[1]}), got {tuple(samples.shape)}"
        )

    def corr(x: torch.Tensor) -> torch.Tensor:
        x = x.double() - x.double().mean(0)
        cov = x.T @ x / len(x)
        sd = cov.diagonal().clamp_min(0).sqrt()
        c = cov / (sd[:, None] * sd[None, :])
        return torch.nan_to_num(c, nan=0.0, posinf=0.0, neginf=0.0)

    mean_err = float((samples.double().mean(0) - reference.double().mean(0)).abs().mean())
    return mean_err, float((corr(samples) - corr(reference)).abs().mean())


def run_digits(cfg: DigitsConfig, seed: int, device: str, show_progress: bool = True):
    """Train both models and return rows ``{model, steps, bits_per_dim, mean_err, corr_err}``.

    The bound runs on the first ``cfg.eval_rows`` test images (all if None); the second return
    value records how many (``bound_test_rows``) beside the train-vs-test reference errors.
    """
    data = digits_grid(levels=cfg.levels, seed=seed)
    if cfg.eval_rows is not None and (isinstance(cfg.eval_rows, bool) or cfg.eval_rows <= 0):
        raise ValueError(f"eval_rows: expected a positive int or None, got {cfg.eval_rows!r}")
    bound_rows = data.test[: cfg.eval_rows]
    rows = []
    models = train_mdm_and_vadd(
        data.train, cfg.levels, cfg, seed=seed, device=device, show_progress=show_progress, task="digits",
        grid=(8, 8),
    )  # fmt: skip
    for name, model in models.items():
        for T in cfg.steps:
            nll = valid_bound(model, bound_rows, T, n_samples=cfg.bound_samples, seed=seed)
            g = torch.Generator().manual_seed(seed + T)
            x = sample(model, steps=T, batch_size=cfg.n_samples, generator=g)
            mean_err, corr_err = pixel_statistics_error(x, data.test)
            rows.append(
                {
                    "model": name,
                    "steps": T,
                    "bits_per_dim": float(nll.mean()) / 64 / math.log(2.0),
                    "mean_err": mean_err,
                    "corr_err": corr_err,
                }
            )
    data_mean, data_corr = pixel_statistics_error(data.train, data.test)
    return rows, {
        "train_vs_test_mean_err": data_mean,
        "train_vs_test_corr_err": data_corr,
        "bound_test_rows": len(bound_rows),
        "test_rows": len(data.test),
    }
