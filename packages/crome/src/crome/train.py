"""The reward-model training loop: Bradley-Terry on preference rows, the tie term on tie rows.

One loop for the vanilla RM (preference rows only) and the CROME RM (original + filtered
augmentations). It starts through `shared_core.distributed.init_distributed`, so it runs alone
or under ``torchrun`` (each rank takes a shard of every batch; DDP averages gradients), and it
checkpoints with `shared_core.checkpoint` so a resumed run ends at the same weights.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from crome.data import PairRow
from crome.losses import LOG2, bradley_terry_loss, crome_loss, tie_loss
from crome.model import RewardModel
from shared_core.checkpoint import load_checkpoint, save_checkpoint
from shared_core.cli import progress
from shared_core.device import seed_everything
from shared_core.distributed import all_reduce_mean, init_distributed, shard_indices, wrap_ddp


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings. `lam` is the tie weight lambda (1 in the paper);
    `trainable_layers` the number of top encoder layers trained (-1: all, 0: head only)."""

    steps: int = 60
    batch_size: int = 16
    lr_encoder: float = 1e-4
    lr_head: float = 2e-3
    weight_decay: float = 0.01
    lam: float = 1.0
    trainable_layers: int = 2
    seed: int = 0
    device: str = "auto"
    checkpoint_every: int = 0

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: expected a positive integer, got {getattr(self, name)}")
        if self.lam < 0:
            raise ValueError(f"lam: expected a non-negative tie weight, got {self.lam}")


def batch_indices(n: int, step: int, batch_size: int, seed: int) -> list[int]:
    """Rows of step `step`: consecutive slices of a per-epoch permutation seeded by (seed, epoch).

    A pure function of its arguments, so a resumed run sees exactly the same batches.
    """
    per_epoch = max(1, n // batch_size)
    epoch, k = divmod(step, per_epoch)
    g = torch.Generator().manual_seed(seed * 100_003 + epoch)
    perm = torch.randperm(n, generator=g)
    return perm[k * batch_size : (k + 1) * batch_size].tolist()


def pair_loss(
    model: Any, rows: Sequence[PairRow], lam: float
) -> tuple[torch.Tensor, dict[str, float]]:
    """The CROME loss of one batch of rows (mean over pairs) and its two parts for logging."""
    core: RewardModel = getattr(model, "module", model)
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
    model: RewardModel,
    rows: Sequence[PairRow],
    config: TrainConfig = TrainConfig(),
    checkpoint: str | os.PathLike[str] | None = None,
    show_progress: bool = False,
) -> list[dict[str, float]]:
    """Train `model` in place on `rows` for ``config.steps`` steps; return the loss history.

    With `checkpoint` set, training resumes from that file if it exists and writes it every
    ``config.checkpoint_every`` steps and at the end.
    """
    if not rows:
        raise ValueError("rows: expected at least one training pair")
    info = init_distributed(config.device)
    seed_everything(config.seed)
    model.freeze(config.trainable_layers)
    model.to(info.device).train()
    head = list(model.head.parameters())
    enc_params = [p for p in model.backbone.parameters() if p.requires_grad]
    groups = [{"params": head, "lr": config.lr_head}]
    if enc_params:
        groups.append({"params": enc_params, "lr": config.lr_encoder})
    opt = torch.optim.AdamW(groups, weight_decay=config.weight_decay)
    start = 0
    if checkpoint is not None and os.path.exists(checkpoint):
        start = load_checkpoint(checkpoint, model=model, optimizer=opt)["step"]
    ddp = wrap_ddp(model, info)
    history: list[dict[str, float]] = []
    for step in progress(
        range(start, config.steps),
        desc="train",
        total=config.steps - start,
        enabled=show_progress and info.is_main,
    ):
        idx = batch_indices(len(rows), step, config.batch_size, config.seed)
        mine = [rows[idx[i]] for i in shard_indices(len(idx), info)]
        loss, parts = pair_loss(ddp, mine, config.lam)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        history.append({"step": step + 1, "loss": float(all_reduce_mean(loss.detach())), **parts})
        done = step + 1
        if (
            checkpoint is not None
            and info.is_main
            and (
                done == config.steps
                or (config.checkpoint_every and done % config.checkpoint_every == 0)
            )
        ):
            save_checkpoint(checkpoint, model=model, optimizer=opt, step=done)
    model.eval()
    return history
