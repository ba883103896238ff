"""Scale configuration and helpers shared by the experiments."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from masked_diffusion import Schedule, TrainConfig, mdlm_loss, train

from pgm.loss import pgm_loss
from shared_core.distributed import DistInfo


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


SCALES = {
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


def fit(
    model: torch.nn.Module,
    loss_fn: Callable[[torch.nn.Module, torch.Tensor, torch.Generator], torch.Tensor],
    data: torch.Tensor,
    cfg: ReproduceConfig,
    steps: int,
    seed: int,
    info: DistInfo,
) -> tuple[list[float], float]:
    """masked-diffusion's `train` with this scale's optimiser; returns (losses, seconds per step)."""
    tc = TrainConfig(
        steps=steps,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        warmup=cfg.warmup,
        seed=seed,
        device=str(info.device),
    )
    t0 = time.perf_counter()
    result = train(model, loss_fn, data, tc, info=info)
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
) -> tuple[tuple[list[float], float], tuple[list[float], float]]:
    """`fit` the MDLM (its NELBO) and the PGM (its partition loss) on the same data and budget."""

    def mdlm_fn(m: torch.nn.Module, b: torch.Tensor, g: torch.Generator) -> torch.Tensor:
        return mdlm_loss(lambda x, t: m(x, t), b, schedule, vocab_size, generator=g).loss

    def pgm_fn(m: torch.nn.Module, b: torch.Tensor, g: torch.Generator) -> torch.Tensor:
        return pgm_loss(m, b, schedule, vocab_size, generator=g).loss

    return (
        fit(mdlm, mdlm_fn, data, cfg, steps, seed, info),
        fit(pgm, pgm_fn, data, cfg, steps, seed, info),
    )


def timed(fn: Callable[[], torch.Tensor]) -> tuple[torch.Tensor, float]:
    """Run `fn` (a sampler) and return (its output, wall seconds), synchronising CUDA."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return out, time.perf_counter() - t0


def n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
