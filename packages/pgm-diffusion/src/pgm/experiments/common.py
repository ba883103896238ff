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
class PGMArm:
    """One PGM of the comparison: its encoder / decoder split and GroupSwap query variant.

    The authors compare a 12-block MDLM with a 6 + 6 PGM of the same width (their
    ``encoder-decoder-small``: decoder blocks are cross-attention + MLP, so an encoder and a
    decoder block have the same parameter count). Every arm must have
    ``n_encoder + n_decoder == mdlm_layers`` (matched depth); parameters then match up to the
    GroupSwap layer (about a third of a block).
    """

    n_encoder: int
    n_decoder: int
    pre_query: str = "learn+freqs"
    query_proj: str = "linear"
    query_residual: bool = False

    @property
    def label(self) -> str:
        """Row name, e.g. ``"PGM 2+2"``, ``"PGM 3+1 learn+freqs+mean"``, ``"PGM 2+2 +residual"``."""
        name = f"PGM {self.n_encoder}+{self.n_decoder}"
        if self.pre_query != "learn+freqs":
            name += f" {self.pre_query}"
        if self.query_proj != "linear":
            name += f" {self.query_proj}"
        if self.query_residual:
            name += " +residual"
        return name


@dataclass(frozen=True)
class ReproduceConfig:
    """One scale of `pgm reproduce`; `tiny` targets a few minutes on 2 CPU cores.

    MDLM has ``mdlm_layers`` self-attention blocks; each PGM arm in ``pgm_arms`` has
    ``n_encoder + n_decoder == mdlm_layers`` blocks of the same width (the authors' 12 vs 6 + 6
    split: matched depth and, up to the GroupSwap layer, matched parameters), trained with the
    same optimiser, steps and batches. On digits both models get 2-D axial RoPE over the 8x8
    grid plus learned absolute positions.
    """

    seq_len: int = 64
    plays: int | None = 4
    d_model: int = 64
    n_heads: int = 4
    mdlm_layers: int = 4
    pgm_arms: tuple[PGMArm, ...] = (PGMArm(2, 2),)
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

    def __post_init__(self) -> None:
        if not self.pgm_arms:
            raise ValueError("pgm_arms: expected at least one PGMArm, got ()")
        for arm in self.pgm_arms:
            if not isinstance(arm, PGMArm):
                raise TypeError(f"pgm_arms: expected PGMArm entries, got {type(arm).__name__}")
        labels = [a.label for a in self.pgm_arms]
        if len(set(labels)) != len(labels):
            raise ValueError(f"pgm_arms: expected distinct arms, got {labels}")
        for arm in self.pgm_arms:
            if arm.n_encoder + arm.n_decoder != self.mdlm_layers:
                raise ValueError(
                    f"pgm_arms: {arm.label} has {arm.n_encoder + arm.n_decoder} blocks, expected "
                    f"n_encoder + n_decoder == mdlm_layers={self.mdlm_layers} (matched depth)"
                )


SCALES: dict[str, ReproduceConfig] = {
    "micro": ReproduceConfig(
        seq_len=16,
        plays=1,
        d_model=16,
        pgm_arms=(PGMArm(2, 2), PGMArm(3, 1, "learn+freqs+mean", query_residual=True)),
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
    # tiny: ablation at matched depth (4 blocks): the paper's half split, a deeper encoder (more
    # layers over the clean tokens), and the GroupSwap query with a residual. Each arm's numbers
    # do not depend on the other arms (own seed; noise drawn from each batch's seed and step).
    "tiny": ReproduceConfig(
        pgm_arms=(PGMArm(2, 2), PGMArm(3, 1), PGMArm(2, 2, query_residual=True)),
    ),
    # small: sized to ~10 CPU-minutes on one thread (0.10 / 0.11 s per MDLM / PGM step at d = 64,
    # L = 64, 4 blocks, batch 32, ~1.5x that at 6 blocks, on the loaded 2-core machine): the
    # paper's 12 vs 6 + 6 shape at half depth (6 vs 3 + 3), all 38 plays, 3.2x tiny's text
    # steps and 4x its digit steps
    "small": ReproduceConfig(
        seq_len=64,
        plays=None,
        d_model=64,
        n_heads=4,
        mdlm_layers=6,
        pgm_arms=(PGMArm(3, 3),),
        steps=800,
        batch_size=32,
        lr=3e-3,
        warmup=50,
        scorer_layers=2,
        scorer_steps=800,
        eval_rows=512,
        eval_samples=4,
        n_generate=64,
        sample_steps=(8, 16, 32, 64),
        digit_steps=800,
        digit_sample_steps=(4, 8, 16, 32),
        n_digit_samples=200,
    ),
    "paper": ReproduceConfig(
        seq_len=1024,
        plays=None,
        d_model=768,
        n_heads=12,
        mdlm_layers=12,
        pgm_arms=(PGMArm(6, 6),),
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


def fit_arms(
    mdlm: torch.nn.Module,
    pgms: dict[str, torch.nn.Module],
    data: torch.Tensor,
    schedule: Schedule,
    vocab_size: int,
    cfg: ReproduceConfig,
    steps: int,
    seed: int,
    info: DistInfo,
    task: str,
) -> dict[str, tuple[list[float], float]]:
    """Train the MDLM (its NELBO) and each PGM (its partition loss) on the same batches and budget.

    Returns ``{"MDLM": (losses, s/step), label: (losses, s/step), ...}``.
    """
    from masked_diffusion import mdlm_loss_fn

    from pgm.loss import pgm_loss_fn

    out = {
        "MDLM": fit_timed(mdlm, mdlm_loss_fn(schedule, vocab_size), data, cfg, steps, seed, info,
                          f"mdlm train ({task})"),
    }  # fmt: skip
    for label, pgm in pgms.items():
        out[label] = fit_timed(pgm, pgm_loss_fn(schedule, vocab_size), data, cfg, steps, seed,
                               info, f"{label.lower()} train ({task})")  # fmt: skip
    return out


def build_pgms(
    cfg: ReproduceConfig,
    vocab_size: int,
    seq_len: int,
    seed: int,
    grid: tuple[int, int] | None = None,
) -> dict[str, torch.nn.Module]:
    """One `PartitionTransformer` per arm, each seeded with `seed` (grid: 2-D RoPE + learned pos)."""
    import torch

    from pgm.model import PartitionTransformer, PGMConfig

    pgms: dict[str, torch.nn.Module] = {}
    for arm in cfg.pgm_arms:
        torch.manual_seed(seed)
        pgms[arm.label] = PartitionTransformer(
            PGMConfig(
                vocab_size, seq_len, cfg.d_model, cfg.n_heads, arm.n_encoder, arm.n_decoder,
                pre_query=arm.pre_query, query_proj=arm.query_proj,
                query_residual=arm.query_residual, grid=grid, learned_positions=grid is not None,
            )
        )  # fmt: skip
    return pgms


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
