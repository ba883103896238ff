"""Scale configuration and the training helpers both experiments use (one loop, one budget)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

# Imported by the CLI for SCALES: torch and the models are imported inside the functions.
if TYPE_CHECKING:
    import torch
    from masked_diffusion import Schedule

    from shared_core.distributed import DistInfo
    from shared_core.train import TrainConfig


@dataclass(frozen=True)
class ReproduceConfig:
    """One scale of `pgm reproduce`; `tiny` targets a few minutes on 2 CPU cores.

    MDLM has ``mdlm_layers`` self-attention blocks, PGM ``pgm_encoder + pgm_decoder`` blocks of
    the same width (the authors' 12 vs 6 + 6 split), trained with the same optimiser, steps and
    batches.
    """

    seq_len: int = 64
    plays: int | None = 4
    d_model: int = 64
    n_heads: int = 4
    mdlm_layers: int = 4
    pgm_encoder: int = 2
    pgm_decoder: int = 2
    steps: int = 250
    batch_size: int = 32
    lr: float = 3e-3
    warmup: int = 25
    scorer_layers: int = 2
    scorer_steps: int = 200
    eval_rows: int = 128
    eval_samples: int = 4
    n_generate: int = 32
    sample_steps: tuple[int, ...] = (8, 16, 64)
    digit_levels: int = 4
    digit_steps: int = 200
    digit_sample_steps: tuple[int, ...] = (4, 8, 16)
    n_digit_samples: int = 200


SCALES: dict[str, ReproduceConfig] = {
    "micro": ReproduceConfig(
        seq_len=16,
        plays=1,
        d_model=16,
        steps=3,
        warmup=1,
        scorer_steps=3,
        digit_steps=3,
        eval_rows=8,
        eval_samples=1,
        n_generate=4,
        sample_steps=(2, 4),
        digit_sample_steps=(2,),
        n_digit_samples=8,
    ),
    "tiny": ReproduceConfig(),
    "small": ReproduceConfig(
        seq_len=128,
        plays=None,
        d_model=256,
        n_heads=8,
        mdlm_layers=6,
        pgm_encoder=3,
        pgm_decoder=3,
        steps=5000,
        batch_size=64,
        lr=1e-3,
        warmup=200,
        scorer_layers=4,
        scorer_steps=5000,
        eval_rows=2048,
        eval_samples=8,
        n_generate=128,
        sample_steps=(16, 32, 64, 128),
        digit_steps=3000,
        digit_sample_steps=(4, 8, 16, 32),
        n_digit_samples=1000,
    ),
    "paper": ReproduceConfig(
        seq_len=1024,
        plays=None,
        d_model=768,
        n_heads=12,
        mdlm_layers=12,
        pgm_encoder=6,
        pgm_decoder=6,
        steps=100_000,
        batch_size=64,
        lr=3e-4,
        warmup=2500,
        scorer_layers=12,
        scorer_steps=100_000,
        eval_rows=4096,
        eval_samples=16,
        n_generate=256,
        sample_steps=(32, 64, 128, 256, 512, 1024),
        digit_steps=20_000,
        digit_sample_steps=(4, 8, 16, 32),
        n_digit_samples=2000,
    ),
}


def train_config(cfg: ReproduceConfig, steps: int) -> TrainConfig:
    """MDLM's optimiser for every model of the run: linear warm-up, then a constant rate."""
    from masked_diffusion import mdlm_train_config

    return mdlm_train_config(steps, lr=cfg.lr, warmup=cfg.warmup)


def fit_timed(
    model: torch.nn.Module,
    loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor],
    data: torch.Tensor,
    cfg: ReproduceConfig,
    steps: int,
    seed: int,
    info: DistInfo,
    desc: str,
) -> tuple[list[float], float]:
    """`shared_core.train.fit` on `row_batches` of `data`; returns (losses, seconds per step)."""
    from masked_diffusion import row_batches

    from shared_core.train import fit

    t0 = time.perf_counter()
    result = fit(
        model, loss_fn, row_batches(data, cfg.batch_size, seed), train_config(cfg, steps),
        desc=desc, info=info,
    )  # fmt: skip
    return result.losses, (time.perf_counter() - t0) / steps


def fit_pair(
    mdlm: torch.nn.Module,
    pgm: torch.nn.Module,
    data: torch.Tensor,
    schedule: Schedule,
    vocab_size: int,
    cfg: ReproduceConfig,
    steps: int,
    seed: int,
    info: DistInfo,
    task: str,
) -> tuple[tuple[list[float], float], tuple[list[float], float]]:
    """Train the MDLM (its NELBO) and the PGM (its partition loss) on the same batches and budget."""
    from masked_diffusion import mdlm_loss_fn

    from pgm.loss import pgm_loss_fn

    return (
        fit_timed(mdlm, mdlm_loss_fn(schedule, vocab_size), data, cfg, steps, seed, info,
                  f"mdlm train ({task})"),
        fit_timed(pgm, pgm_loss_fn(schedule, vocab_size), data, cfg, steps, seed, info,
                  f"pgm train ({task})"),
    )  # fmt: skip


def timed(fn: Callable[[], torch.Tensor], desc: str = "") -> tuple[torch.Tensor, float]:
    """Run `fn` (a sampler) and return (its output, wall seconds), synchronising CUDA.

    `desc` (e.g. ``"pgm sample L=64 steps=8"``) is printed first, so a long run shows progress.
    """
    import torch

    if desc:
        print(desc, flush=True)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return out, time.perf_counter() - t0


def n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
