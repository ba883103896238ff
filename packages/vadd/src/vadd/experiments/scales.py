"""The scales of ``vadd reproduce`` (torch-free: the CLI imports this module for ``--help``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Toy2DConfig:
    """Sizes of the toy run; the defaults are the tiny scale (about a minute per model on CPU)."""

    bins: int = 32
    cells: int = 4
    latent_dim: int = 4
    d_model: int = 32
    n_layers: int = 2
    train_rows: int = 20_000
    train_steps: int = 800
    batch_size: int = 256
    lr: float = 3e-3
    anneal_steps: int = 200
    steps: tuple[int, ...] = (1, 2, 4, 16)
    n_latent: int = 256  # scrambled-Sobol points per step and replicate (0.2: 128 random draws)
    quad_reps: int = 2  # independent replicates of the z integral: the standard error of TV
    n_scatter: int = 2000


@dataclass(frozen=True)
class DigitsConfig:
    """Sizes of the digits run; defaults are the tiny scale (about a minute for both models)."""

    levels: int = 2
    latent_dim: int = 8
    d_model: int = 64
    n_layers: int = 2
    train_steps: int = 200  # 400 in 0.2.0: two thirds of tiny's CPU time went to these steps
    batch_size: int = 128
    lr: float = 2e-3
    anneal_steps: int = 50
    steps: tuple[int, ...] = (1, 2, 4, 16)
    n_samples: int = 400
    bound_samples: int = 2
    # the valid bound runs on the first `eval_rows` test images (None: all 180); the report
    # says how many were used
    eval_rows: int | None = None


@dataclass(frozen=True)
class ReproduceConfig:
    """One scale: the 2-D toy (finding 1) and the binarised digits (finding 2)."""

    toy2d: Toy2DConfig = field(default_factory=Toy2DConfig)
    digits: DigitsConfig = field(default_factory=DigitsConfig)


SCALES: dict[str, ReproduceConfig] = {
    "micro": ReproduceConfig(
        Toy2DConfig(bins=8, cells=2, d_model=16, n_layers=1, train_rows=512, train_steps=5,
                    batch_size=64, anneal_steps=2, steps=(1, 2), n_latent=8, n_scatter=16),
        DigitsConfig(d_model=16, n_layers=1, train_steps=5, batch_size=32, anneal_steps=2,
                     steps=(1, 2), n_samples=16, bound_samples=1, eval_rows=32),
    ),
    "tiny": ReproduceConfig(),
    "small": ReproduceConfig(
        Toy2DConfig(bins=64, d_model=64, train_rows=100_000, train_steps=4000, n_latent=256),
        DigitsConfig(d_model=128, n_layers=4, train_steps=4000, anneal_steps=100),
    ),
    "paper": ReproduceConfig(
        Toy2DConfig(bins=64, d_model=128, n_layers=4, train_rows=500_000, train_steps=20_000,
                    n_latent=1024),
        DigitsConfig(levels=4, d_model=256, n_layers=8, train_steps=50_000, latent_dim=16,
                     anneal_steps=100),
    ),
}  # fmt: skip
