"""One process of the two-process check in test_sequence_model.py (run under ``torchrun`` by
it, not collected by pytest), and the same gradient step in one process.

``argv``: ``OUT GRADIENTS MODEL DATA`` then the ``crome train`` flags. Each process runs
``crome train ... --out OUT`` (the console script's `main`, what ``python -m crome`` runs), then
`one_step_gradients`; the main process saves those gradients to ``GRADIENTS``. One launch does
both, so the check pays for one set of imports per process.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from crome.cli import main
from crome.sequence_model import SequenceRewardModel
from crome.train import TrainConfig, train_reward_model
from crome.verbs import read_rows


def one_step_gradients(model_dir: str | Path, data: str | Path) -> dict[str, torch.Tensor]:
    """Every parameter's gradient (by name) after one step on 8 rows of `data`, from a
    `SequenceRewardModel` whose head is drawn at random (seed 0): the zero head of a fresh
    model would give the decoder a zero gradient at step 1."""
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
    out, gradients_file, model_dir, data, *flags = sys.argv[1:]
    status = main(["train", "--model", model_dir, "--data", data, "--out", out, *flags])
    if status:
        raise SystemExit(status)
    gradients = one_step_gradients(model_dir, data)
    if gradients:  # only the main process runs the callback
        torch.save(gradients, gradients_file)
