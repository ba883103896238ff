"""One process of the two-process check in test_sequence_model.py (run under ``torchrun`` by
it, not collected by pytest), and the same step in one process (`one_step_gradients`).

One optimiser step of `crome.train_reward_model` on the first 8 rows of a file (4 per process
under DDP), from a `SequenceRewardModel` whose head is drawn at random (seed 0); the main
process saves every parameter's gradient after the step to ``argv[3]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from crome.sequence_model import SequenceRewardModel
from crome.train import TrainConfig, train_reward_model
from crome.verbs import read_rows


def one_step_gradients(model_dir: str | Path, data: str | Path) -> dict[str, torch.Tensor]:
    """Every parameter's gradient (by name) after one step on 8 rows of `data`."""
    model = SequenceRewardModel.from_causal_lm(model_dir, 32)
    with torch.no_grad():
        g = torch.Generator().manual_seed(0)
        model.head.weight.copy_(0.5 * torch.randn(model.head.weight.shape, generator=g))
    grads: dict[str, torch.Tensor] = {}

    def grab(step: int, record: dict[str, float]) -> None:
        for name, p in model.named_parameters():
            if p.grad is not None:
                grads[name] = p.grad.detach().clone()

    config = TrainConfig(steps=1, batch_size=8, trainable_layers=-1, device="cpu")
    train_reward_model(model, read_rows(Path(data)), config, callback=grab)
    return grads


if __name__ == "__main__":
    gradients = one_step_gradients(sys.argv[1], sys.argv[2])
    if gradients:  # only the main process runs the callback
        torch.save(gradients, sys.argv[3])
