"""The reproduction's sizes, one `Config` per scale (no torch import: ``convt3 --help`` stays fast)."""

from __future__ import annotations

from dataclasses import dataclass

from convt3.data import PDES

# CPU seconds per scale, one thread: the heartbeat's ETA and the costs `convt3 reproduce --help`
# prints: `cpu_s` of the committed results/<scale>.json (tiny, small).
ESTIMATE_S = {"micro": 15.0, "tiny": 90.0, "small": 1057.0}


@dataclass(frozen=True)
class Config:
    """One scale of ``convt3 reproduce``; every field is the same for all arms."""

    # finding 1: forced PDEs on a grid, open-loop response
    tasks: tuple[str, ...] = PDES
    size: int = 16  # grid side
    n_train: int = 64  # training trajectories
    n_test: int = 16  # test trajectories
    train_len: int = 32  # training sequence length (steps)
    horizons: tuple[int, ...] = (1, 10, 50, 200)  # evaluated beyond train_len
    seeds: tuple[int, ...] = (0,)  # offsets added to --seed (data and initialisation)
    valid_threshold: float = 0.25  # extrapolation horizon: steps before MSE / variance exceeds it
    pairs: tuple[tuple[str, str], ...] = (  # (arm, baseline): per-seed paired differences
        ("convt3_bc1", "convs5_bc1"),
        ("minit3_bc1", "convs5_bc1"),
        ("convt3", "convs5"),
        ("minit3", "convs5"),
    )
    # finding 2: moving digits, closed-loop frame prediction
    digits: bool = True
    canvas: int = 32
    context: int = 10  # frames read
    future: int = 20  # frames predicted
    digit_train: int = 256
    digit_test: int = 32
    digit_steps: int = 30
    digit_models: tuple[str, ...] = ("convt3", "convs5", "convlstm")
    digit_batch: int = 4
    # models and training (shared_core.train.fit)
    models: tuple[str, ...] = ("convt3", "convt3_direct", "convs5", "convlstm")  # common.ARMS
    d_model: int = 8
    state_size: int = 16  # ConvS5's ssm_size: P = 8 complex state channels
    n_layers: int = 1
    # initial SSM steps: time constants 2/dt of about 4 to 100 steps (ConvS5's [1e-3, 1e-1] leaves
    # near-integrator modes, up to 2,000 steps, that a 32-step training sequence cannot shape)
    dt_min: float = 0.02
    dt_max: float = 0.5
    steps: int = 150
    batch: int = 4
    lr: float = 1e-2


SCALES: dict[str, Config] = {
    "micro": Config(
        tasks=("heat",),
        models=(
            "convt3_bc1",
            "minit3_bc1",
            "convs5_bc1",
            "convt3",
            "convt3_direct",
            "convs5",
            "convlstm",
        ),
        seeds=(0, 1),
        n_train=8,
        n_test=4,
        train_len=8,
        horizons=(1, 10, 20),
        steps=3,
        batch=2,
        digit_train=4,
        digit_test=2,
        digit_steps=2,
        digit_batch=2,
        future=6,
        context=4,
        canvas=16,
    ),
    # tiny: the paper's favourable regime (B and C 1x1) against 3x3 B/C on heat, two seeds
    "tiny": Config(
        tasks=("heat",),
        horizons=(1, 10, 32, 50, 100),
        seeds=(0, 1),
        models=("convt3_bc1", "minit3_bc1", "convs5_bc1", "convt3", "convs5", "convlstm"),
        digits=False,
    ),
    # small (<= 30 CPU-min at one thread): tiny's study with MiniT3 in both regimes, five
    # seeds (paired intervals), 500 steps, horizons to 200; moving digits with one seed
    "small": Config(
        tasks=("heat",),
        models=(
            "convt3_bc1",
            "minit3_bc1",
            "convs5_bc1",
            "convt3",
            "minit3",
            "convs5",
            "convlstm",
        ),
        seeds=(0, 1, 2, 3, 4),
        n_train=128,
        n_test=32,
        horizons=(1, 10, 32, 50, 100, 200),
        steps=500,
        digit_models=("convt3", "minit3", "convs5"),
        digit_train=512,
        digit_test=32,
        digit_steps=300,
    ),
    "paper": Config(
        size=64,
        n_train=2048,
        n_test=256,
        train_len=100,
        horizons=(1, 10, 100, 400, 800),
        steps=20000,
        n_layers=8,
        d_model=64,
        state_size=128,
        canvas=64,
        context=100,
        future=800,
        digit_train=10000,
        digit_test=256,
        digit_steps=20000,
        digit_batch=8,
    ),
}
