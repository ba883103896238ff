"""One training run of the grid: a single pass over D training tokens, clean-test loss at the end."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from quality_scaling.model import GPT, GPTConfig
from shared_core.distributed import all_reduce_mean, init_distributed, wrap_ddp

__all__ = ["TrainConfig", "evaluate", "train_run"]


@dataclass(frozen=True)
class TrainConfig:
    """AdamW, linear warm-up then cosine decay to `final_lr_frac`, scheduled to the run's own D."""

    batch_size: int = 16
    lr: float = 3e-3
    weight_decay: float = 0.0
    warmup_frac: float = 0.05
    final_lr_frac: float = 0.1
    seed: int = 0
    device: str = "cpu"


def _lr(step: int, total: int, cfg: TrainConfig) -> float:
    warm = max(1, int(cfg.warmup_frac * total))
    if step < warm:
        return cfg.lr * (step + 1) / warm
    progress = (step - warm) / max(1, total - warm)
    return cfg.lr * (
        cfg.final_lr_frac + (1 - cfg.final_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress))
    )


def _loss(model: torch.nn.Module, seqs: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    logits = model(seqs[:, :-1])
    nll = F.cross_entropy(logits.flatten(0, 1), seqs[:, 1:].flatten(), reduction="none")
    nll = nll.view(seqs.shape[0], -1)
    return nll.mean() if mask is None else nll[:, mask].mean()


@torch.no_grad()
def evaluate(
    model: torch.nn.Module, seqs: np.ndarray, mask: np.ndarray | None = None, batch: int = 512
) -> float:
    """Mean next-token loss (nats) on `seqs` ``(rows, T + 1)``, over `mask` positions if given."""
    model.eval()
    dev = next(model.parameters()).device
    m = None if mask is None else torch.as_tensor(mask, device=dev)
    total, count = 0.0, 0
    for lo in range(0, len(seqs), batch):
        x = torch.as_tensor(seqs[lo : lo + batch], device=dev)
        total += float(_loss(model, x, m)) * len(x)
        count += len(x)
    model.train()
    return total / count


def train_run(
    model_cfg: GPTConfig,
    train_seqs: np.ndarray,
    test_seqs: np.ndarray,
    cfg: TrainConfig = TrainConfig(),
    mask: np.ndarray | None = None,
) -> dict[str, float]:
    """Train a fresh `GPT` for one pass over `train_seqs`; return its clean-test loss and size.

    Runs alone or under ``torchrun`` (each rank takes its share of every batch; gradients are
    averaged by DDP). `mask` selects the positions that count in the loss (seq2seq targets).
    """
    if train_seqs.ndim != 2 or train_seqs.shape[1] != model_cfg.seq_len + 1:
        raise ValueError(
            f"train_seqs: expected (rows, {model_cfg.seq_len + 1}), got {train_seqs.shape}"
        )
    info = init_distributed(cfg.device)
    torch.manual_seed(cfg.seed)
    model = GPT(model_cfg).to(info.device)
    net = wrap_ddp(model, info)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    m = None if mask is None else torch.as_tensor(mask, device=info.device)
    steps = max(1, len(train_seqs) // cfg.batch_size)
    for step in range(steps):
        batch = train_seqs[step * cfg.batch_size : (step + 1) * cfg.batch_size]
        batch = batch[info.rank :: info.world_size]
        for g in opt.param_groups:
            g["lr"] = _lr(step, steps, cfg)
        loss = _loss(net, torch.as_tensor(batch, device=info.device), m)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    test_loss = float(all_reduce_mean(torch.tensor(evaluate(model, test_seqs, mask))))
    return {
        "loss": test_loss,
        "n_params": float(model.n_params()),
        "n_params_non_embedding": float(model.n_params(non_embedding=True)),
        "steps": float(steps),
    }
