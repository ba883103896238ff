"""The scales of `crome reproduce` (no torch import: the CLI reads this table for ``--help``).

``micro`` is a smoke run of the whole pipeline in seconds: a random 2-layer BERT on the
world's word vocabulary instead of MiniLM, so it needs no optional extra; its numbers say
nothing about the method. ``tiny`` (the default) is the headline run on the MiniLM-L6
encoder, sized for 2 CPU cores; ``small`` is the larger CPU run (about 8.5 CPU-minutes on one
thread); ``paper`` is sized for a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crome.train import TrainConfig
from crome.world import WorldConfig

BACKBONES = ("minilm", "random-bert")


@dataclass(frozen=True)
class ExperimentConfig:
    """One scale of the experiment; every field is recorded in the run's config.json.

    `backbone`: ``"minilm"`` (the pretrained MiniLM-L6 encoder, extra ``crome[minilm]``) or
    ``"random-bert"`` (a randomly initialised 2-layer BERT on the world's words: micro only).
    `tau` / `delta`: the augmentation filter's thresholds (`crome.filter_augmentations`).
    `epochs`: when set, both RMs take ``ceil(epochs * rows / batch_size)`` steps, rows being
    the CROME data (original + augmented pairs); else ``train.steps``.
    """

    scale: str = "tiny"
    world: WorldConfig = field(default_factory=WorldConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    backbone: str = "minilm"
    max_length: int = 40
    tau: float = 0.9
    delta: float = 0.1
    n_best_of: int = 4
    epochs: float | None = None
    llm_oracle: bool = False
    llm_prompts: int = 4
    llm_max_tokens: int = 32

    def __post_init__(self) -> None:
        if self.backbone not in BACKBONES:
            raise ValueError(f"backbone: expected one of {BACKBONES}, got {self.backbone!r}")
        if self.epochs is not None and not (self.epochs > 0 and self.epochs < float("inf")):
            raise ValueError(f"epochs: expected a finite number > 0 or None, got {self.epochs!r}")
        if self.n_best_of < 2:
            raise ValueError(f"n_best_of: expected at least 2 candidates, got {self.n_best_of}")


SCALES: dict[str, ExperimentConfig] = {
    "micro": ExperimentConfig(
        scale="micro",
        world=WorldConfig(n_facts=10, n_train=32, n_test=16),
        train=TrainConfig(
            steps=8, batch_size=8, trainable_layers=-1, lr_encoder=3e-3, lr_head=1e-2
        ),
        backbone="random-bert",
    ),
    "tiny": ExperimentConfig(
        scale="tiny",
        world=WorldConfig(n_facts=20, n_train=160, n_test=64),
        train=TrainConfig(
            steps=36, batch_size=16, trainable_layers=2, lr_encoder=2e-4, lr_head=3e-3
        ),
        epochs=3.0,  # both RMs: 3 passes over the CROME data (issue 14)
    ),
    # the larger CPU run (results/small.json: 8.6 CPU-min on one thread): twice tiny's pairs,
    # 4 trainable layers, the SmolLM2 oracle on 8 prompts; `paper` is the one sized for a GPU
    "small": ExperimentConfig(
        scale="small",
        world=WorldConfig(n_facts=40, n_train=320, n_test=200),
        train=TrainConfig(
            steps=36, batch_size=32, trainable_layers=4, lr_encoder=2e-4, lr_head=3e-3
        ),
        epochs=3.0,  # both RMs: 3 passes over the CROME data (issue 14)
        llm_oracle=True,
        llm_prompts=8,
    ),
    "paper": ExperimentConfig(
        scale="paper",
        world=WorldConfig(n_facts=100, n_train=5000, n_test=1000),
        train=TrainConfig(steps=2000, batch_size=64, trainable_layers=-1, lr_encoder=3e-5),
        epochs=3.0,
        llm_oracle=True,
        llm_prompts=100,
    ),
}


ESTIMATE_S = {"micro": 14.0, "tiny": 175.0, "small": 505.0}
"""CPU seconds of ``crome reproduce`` per scale (one thread): the heartbeat's ETA and --help.
tiny: the committed run results/tiny.json (173 s in the run, 179 s with the imports); small:
results/small.json (495 s in the run, 514 s with the imports)."""


def reproduce_phases(llm_oracle: bool) -> list[str]:
    """The phases ``crome reproduce`` goes through (`shared_core.progress.plan`)."""
    llm = ["SmolLM2 oracle"] if llm_oracle else []
    return ["load", "augment", "train standard RM", "train CROME RM", "evaluate", *llm, "report"]
