"""Reward-model training: Bradley-Terry on preference rows, the tie term on tie rows.

CROME adds only its loss (`pair_loss`) and its batches (`batch_indices`) to the monorepo's one
training loop, `shared_core.train.fit`, which brings exact checkpoint/resume, ``torchrun`` data
parallelism (each rank takes a shard of every batch; DDP averages gradients) and the progress
bar. The same function trains the vanilla RM (preference rows only) and the CROME RM
(original + filtered augmentations).

Optimiser: AdamW with two learning rates (the fresh linear head learns faster than the
pretrained encoder), the default AdamW betas ``(0.9, 0.999)``, a constant rate, no warm-up and
no gradient clipping: the settings this package used before it moved to `fit`.

torch is imported inside the functions, so ``from crome.train import TrainConfig`` (the CLI's
scale table) stays cheap.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crome.data import PairRow, check_rows

if TYPE_CHECKING:
    import torch

    from crome.model import RewardModel
    from crome.sequence_model import SequenceRewardModel

BETAS = (0.9, 0.999)  # torch's AdamW default, what the pre-`fit` trainer used


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings. `lam` is the tie weight lambda (1 in the paper);
    `trainable_layers` the number of top encoder layers trained (-1: all, 0: head only).

    A batch holds ``min(batch_size, len(rows))`` rows (the whole data set when it is smaller).
    `grad_accum`: each step's batch goes through the model in that many micro-batches (the
    same step, a fraction of the activations in memory); `bf16`: bfloat16 autocast (fp32
    weights), else fp32 throughout.
    """

    steps: int = 60
    batch_size: int = 16
    lr_encoder: float = 1e-4
    lr_head: float = 2e-3
    weight_decay: float = 0.01  # on weight matrices only (shared_core.train.decay_groups)
    lam: float = 1.0
    trainable_layers: int = 2
    seed: int = 0
    device: str = "auto"
    checkpoint_every: int = 0
    grad_accum: int = 1
    bf16: bool = False

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "grad_accum"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name}: expected a positive integer, got {v!r}")
        for name in ("trainable_layers", "seed", "checkpoint_every"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"{name}: expected an int, got {type(v).__name__} {v!r}")
        if self.trainable_layers < -1:
            raise ValueError(
                f"trainable_layers: expected -1 (all), 0 (head only) or a layer count, "
                f"got {self.trainable_layers}"
            )
        if self.seed < 0 or self.checkpoint_every < 0:
            bad = "seed" if self.seed < 0 else "checkpoint_every"
            raise ValueError(f"{bad}: expected a non-negative int, got {getattr(self, bad)}")
        for name in ("lr_encoder", "lr_head"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"{name}: expected a finite learning rate > 0, got {v!r}")
        for name in ("weight_decay", "lam"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                what = "tie weight" if name == "lam" else "weight decay"
                raise ValueError(f"{name}: expected a finite non-negative {what}, got {v!r}")
        if not isinstance(self.bf16, bool):
            raise TypeError(f"bf16: expected True or False, got {self.bf16!r}")
        if not isinstance(self.device, str):
            raise TypeError(
                f"device: expected a string such as 'auto' or 'cpu', got {self.device!r}"
            )


def batch_indices(n: int, step: int, batch_size: int, seed: int) -> list[int]:
    """Rows of step `step`: consecutive slices of a per-epoch permutation seeded by (seed, epoch).

    A pure function of its arguments, so a resumed run sees exactly the same batches.
    """
    import torch

    if n < 1:
        raise ValueError(f"n: expected at least one row, got {n}")
    per_epoch = max(1, n // batch_size)
    epoch, k = divmod(step, per_epoch)
    g = torch.Generator().manual_seed(seed * 100_003 + epoch)
    perm = torch.randperm(n, generator=g)
    return perm[k * batch_size : (k + 1) * batch_size].tolist()


def pair_loss(
    model: Any, rows: Sequence[PairRow], lam: float
) -> tuple[torch.Tensor, dict[str, float]]:
    """The CROME loss of one batch of rows (mean over pairs) and its two parts for logging.

    `model` is a `RewardModel` / `SequenceRewardModel` or its DDP wrapper. Parts: ``bt`` (mean BT loss of the
    preference rows) and ``tie_minus_log2`` (mean tie loss minus its minimum log 2); NaN when
    the batch has no row of that kind.
    """
    import torch

    from crome.losses import LOG2, bradley_terry_loss, crome_loss, tie_loss

    core: RewardModel | SequenceRewardModel = getattr(model, "module", model)
    b = len(rows)
    enc = core.encode(
        [r.prompt for r in rows] * 2, [r.chosen for r in rows] + [r.rejected for r in rows]
    )
    r = model(**enc)
    delta = r[:b] - r[b:]
    is_tie = torch.tensor([row.label == "tie" for row in rows], device=delta.device)
    loss = crome_loss(delta[~is_tie], delta[is_tie], lam=lam)
    with torch.no_grad():
        parts = {
            "bt": float(bradley_terry_loss(delta[~is_tie]).mean())
            if (~is_tie).any()
            else float("nan"),
            "tie_minus_log2": float(tie_loss(delta[is_tie]).mean() - LOG2)
            if is_tie.any()
            else float("nan"),
        }
    return loss, parts


def train_reward_model(
    model: RewardModel | SequenceRewardModel,
    rows: Sequence[PairRow],
    config: TrainConfig = TrainConfig(),
    checkpoint: str | os.PathLike[str] | None = None,
    show_progress: bool = False,
    desc: str = "rm train",
    callback: Callable[[int, dict[str, float]], None] | None = None,
) -> list[dict[str, float]]:
    """Train `model` in place on `rows` for ``config.steps`` steps; return the loss history.

    One record per step: ``step`` (1-based), ``loss`` (averaged over the processes under
    ``torchrun``), ``lr`` (the head's rate), ``bt`` and ``tie_minus_log2`` (this process's
    rows). With `checkpoint` set, training resumes from that file if it exists (the history
    then includes the steps done before) and writes it every ``config.checkpoint_every``
    steps and at the end. `desc` labels the progress bar; `callback(step, record)` runs on
    the main process after each optimiser step (the gradients are still on the model) and
    may add entries to `record`.
    """
    from crome.model import RewardModel
    from crome.sequence_model import SequenceRewardModel
    from shared_core.device import seed_everything
    from shared_core.train import TrainConfig as FitConfig
    from shared_core.train import decay_groups, fit

    if not isinstance(model, (RewardModel, SequenceRewardModel)):
        raise TypeError(
            f"model: expected a crome.RewardModel or SequenceRewardModel, got {type(model).__name__}"
        )
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config: expected a crome.TrainConfig, got {type(config).__name__}")
    data = check_rows(rows)
    seed_everything(config.seed)
    model.freeze(config.trainable_layers)
    groups = decay_groups(model.head, config.weight_decay, lr=config.lr_head)
    groups += decay_groups(model.backbone, config.weight_decay, lr=config.lr_encoder)
    fit_config = FitConfig(
        steps=config.steps,
        lr=config.lr_head,
        warmup=0,
        schedule="constant",
        weight_decay=config.weight_decay,
        betas=BETAS,
        grad_clip=0.0,
        checkpoint_every=config.checkpoint_every,
        grad_accum=config.grad_accum,
        amp_dtype="bfloat16" if config.bf16 else None,
    )

    def batch_fn(step: int) -> list[PairRow]:
        return [data[i] for i in batch_indices(len(data), step, config.batch_size, config.seed)]

    def loss_fn(m: Any, batch: list[PairRow]) -> tuple[torch.Tensor, dict[str, float]]:
        return pair_loss(m, batch, config.lam)

    result = fit(
        model,
        loss_fn,
        batch_fn,
        fit_config,
        param_groups=groups,
        checkpoint=checkpoint,
        desc=desc,
        show_progress=show_progress,
        device=config.device,
        callback=callback,
    )
    return [{"step": i + 1, **r} for i, r in enumerate(result.history)]
