"""One training run of the grid: a single pass over D training tokens, clean-test loss at the end.

The loop, the optimiser and the schedule are `shared_core.train.fit`'s; this module supplies the
next-token loss (`lm_loss`) and the batches (step k takes rows ``[k B, (k + 1) B)`` of the
training sequences: one pass, no reuse, a pure function of the step).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from quality_scaling.model import GPT, GPTConfig
from shared_core.distributed import all_reduce_mean, init_distributed
from shared_core.train import TrainConfig as FitConfig
from shared_core.train import fit

__all__ = ["TrainConfig", "evaluate", "lm_loss", "train_run"]


@dataclass(frozen=True)
class TrainConfig:
    """AdamW, linear warm-up then cosine decay to `final_lr_frac`, scheduled to the run's own D."""

    batch_size: int = 16
    lr: float = 3e-3
    weight_decay: float = 0.0
    warmup_frac: float = 0.05  # of the run's steps
    final_lr_frac: float = 0.1  # the cosine ends at final_lr_frac * lr
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self) -> None:
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size: expected a positive int, got {self.batch_size!r}")
        if not 0.0 <= self.warmup_frac < 1.0:
            raise ValueError(f"warmup_frac: expected a value in [0, 1), got {self.warmup_frac!r}")
        if not 0.0 <= self.final_lr_frac <= 1.0:
            raise ValueError(
                f"final_lr_frac: expected a value in [0, 1], got {self.final_lr_frac!r}"
            )

    def fit_config(self, steps: int) -> FitConfig:
        """The `shared_core.train.TrainConfig` of a run of `steps` steps.

        torch's AdamW defaults (betas (0.9, 0.999)) and no clipping: the settings the grid's
        published numbers were measured with.
        """
        return FitConfig(
            steps=steps,
            lr=self.lr,
            warmup=max(1, int(self.warmup_frac * steps)),
            schedule="cosine",
            min_lr_ratio=self.final_lr_frac,
            weight_decay=self.weight_decay,
            betas=(0.9, 0.999),
            grad_clip=0.0,
        )


def lm_loss(model: torch.nn.Module, seqs: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Mean next-token cross-entropy of ``seqs`` ``(batch, T + 1)``, over `mask` positions ``(T,)``."""
    logits = model(seqs[:, :-1])
    nll = F.cross_entropy(logits.flatten(0, 1), seqs[:, 1:].flatten(), reduction="none")
    nll = nll.view(seqs.shape[0], -1)
    return nll.mean() if mask is None else nll[:, mask].mean()


@torch.no_grad()
def evaluate(
    model: torch.nn.Module, seqs: np.ndarray, mask: np.ndarray | None = None, batch: int = 512
) -> float:
    """Mean next-token loss (nats) on `seqs` ``(rows, T + 1)``, over `mask` positions if given."""
    if len(seqs) == 0:
        raise ValueError("seqs: expected at least one test sequence, got 0 rows")
    model.eval()
    dev = next(model.parameters()).device
    m = None if mask is None else torch.as_tensor(mask, device=dev)
    total, count = 0.0, 0
    for lo in range(0, len(seqs), batch):
        x = torch.as_tensor(seqs[lo : lo + batch], device=dev)
        total += float(lm_loss(model, x, m)) * len(x)
        count += len(x)
    return total / count


def _check_seqs(name: str, seqs: np.ndarray, model_cfg: GPTConfig) -> None:
    if not isinstance(seqs, np.ndarray) or not np.issubdtype(seqs.dtype, np.integer):
        raise TypeError(f"{name}: expected an integer numpy array of token ids, got {seqs!r:.60}")
    if seqs.ndim != 2 or seqs.shape[1] != model_cfg.seq_len + 1 or len(seqs) == 0:
        raise ValueError(
            f"{name}: expected shape (rows >= 1, {model_cfg.seq_len + 1}), got {seqs.shape}"
        )
    if seqs.min() < 0 or seqs.max() >= model_cfg.vocab_size:
        raise ValueError(
            f"{name}: token ids must lie in [0, vocab_size={model_cfg.vocab_size}), "
            f"got [{seqs.min()}, {seqs.max()}]"
        )


def train_run(
    model_cfg: GPTConfig,
    train_seqs: np.ndarray,
    test_seqs: np.ndarray,
    cfg: TrainConfig = TrainConfig(),
    mask: np.ndarray | None = None,
    desc: str = "gpt train",
) -> dict[str, float]:
    """Train a fresh `GPT` for one pass over `train_seqs`; return its clean-test loss and size.

    Runs alone or under ``torchrun`` (each rank takes its share of every batch; gradients are
    averaged by DDP). `mask` ``(seq_len,)`` selects the positions that count in the loss
    (seq2seq targets).
    """
    _check_seqs("train_seqs", train_seqs, model_cfg)
    _check_seqs("test_seqs", test_seqs, model_cfg)
    if mask is not None and (np.shape(mask) != (model_cfg.seq_len,) or not np.any(mask)):
        raise ValueError(
            f"mask: expected a boolean array of shape ({model_cfg.seq_len},) with a True entry, "
            f"got shape {np.shape(mask)}"
        )
    info = init_distributed(cfg.device)
    torch.manual_seed(cfg.seed)
    model = GPT(model_cfg)
    m = None if mask is None else torch.as_tensor(mask, device=info.device)
    steps = max(1, len(train_seqs) // cfg.batch_size)

    def batch_fn(step: int) -> torch.Tensor:
        return torch.as_tensor(train_seqs[step * cfg.batch_size : (step + 1) * cfg.batch_size])

    def loss_fn(net: torch.nn.Module, seqs: torch.Tensor) -> torch.Tensor:
        return lm_loss(net, seqs, m)

    fit(model, loss_fn, batch_fn, cfg.fit_config(steps), desc=desc, show_progress=False, info=info)
    test_loss = float(all_reduce_mean(torch.tensor(evaluate(model, test_seqs, mask))))
    return {
        "loss": test_loss,
        "n_params": float(model.n_params()),
        "n_params_non_embedding": float(model.n_params(non_embedding=True)),
        "steps": float(steps),
    }
