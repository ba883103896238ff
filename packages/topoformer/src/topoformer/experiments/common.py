"""One training recipe per method, shared by the experiments: each trains on `fit_idx`,
scores `val_idx` and `test_idx` after every epoch (or every C), and returns both protocols'
numbers (`topoformer.protocol.select`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from shared_core.device import seed_everything
from topoformer.model import TopoFormer, TopoFormerConfig
from topoformer.protocol import Selection, select
from topoformer.training import train_epochs


@dataclass(frozen=True)
class TrainSettings:
    """Epoch budget and optimiser of every neural method (the authors': 100 epochs, 32, 1e-3)."""

    epochs: int = 100
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 1e-4


@dataclass(frozen=True)
class Task:
    """What a method needs to know about the targets."""

    targets: np.ndarray  # (N,) int classes or float regression targets
    classification: bool = True

    @property
    def num_outputs(self) -> int:
        return int(self.targets.max()) + 1 if self.classification else 1


@dataclass
class FoldSplit:
    fit: np.ndarray
    val: np.ndarray
    test: np.ndarray
    seed: int = 0
    scale: tuple[float, float] = field(default=(0.0, 1.0))  # regression target mean, std


def _score(task: Task, out: torch.Tensor, idx: np.ndarray, scale: tuple[float, float]) -> float:
    """Accuracy (classification) or RMSE in target units (regression)."""
    y = task.targets[idx]
    if task.classification:
        return float((out.argmax(1).cpu().numpy() == y).mean())
    pred = out[:, 0].cpu().numpy().astype(np.float64) * scale[1] + scale[0]
    return float(np.sqrt(np.mean((pred - y) ** 2)))


def _loss(task: Task) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    if task.classification:
        return F.cross_entropy
    return lambda out, y: F.mse_loss(out[:, 0], y)


def _targets(task: Task, split: FoldSplit) -> torch.Tensor:
    if task.classification:
        return torch.as_tensor(task.targets, dtype=torch.long)
    mu, sd = split.scale
    return torch.as_tensor((task.targets - mu) / sd, dtype=torch.float32)


def run_neural(
    model: torch.nn.Module,
    forward: Callable[[torch.nn.Module, np.ndarray], torch.Tensor],
    task: Task,
    split: FoldSplit,
    settings: TrainSettings,
    device: str,
    desc: str,
) -> tuple[Selection, list[dict[str, float]]]:
    """Train with `train_epochs`; `forward(model, idx)` runs the model on samples `idx`."""
    y = _targets(task, split)
    loss = _loss(task)

    def loss_fn(m: Any, idx: np.ndarray) -> torch.Tensor:
        out = forward(m, idx)
        return loss(out, y[idx].to(out.device))

    def evaluate(m: torch.nn.Module) -> dict[str, float]:
        return {
            "val": _score(task, forward(m, split.val), split.val, split.scale),
            "test": _score(task, forward(m, split.test), split.test, split.scale),
        }

    scores = train_epochs(
        model, loss_fn, lambda idx: idx, split.fit, settings.epochs, settings.batch_size,
        evaluate, seed=split.seed, lr=settings.lr, weight_decay=settings.weight_decay,
        device=device, desc=desc,
    )  # fmt: skip
    sel = select([s["val"] for s in scores], [s["test"] for s in scores], task.classification)
    return sel, scores


def _device_of(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def topoformer_fold(
    sequences: Sequence[np.ndarray], task: Task, split: FoldSplit, settings: TrainSettings,
    config: TopoFormerConfig, device: str, extra: np.ndarray | None = None,
) -> tuple[Selection, list[dict[str, float]]]:  # fmt: skip
    """TopoFormer on precomputed token sequences ``[(N, T_f, 4)]`` (+ optional ``(N, k)``)."""
    seed_everything(split.seed)
    xs = [torch.as_tensor(s, dtype=torch.float32) for s in sequences]
    ex = None if extra is None else torch.as_tensor(extra, dtype=torch.float32)
    model = TopoFormer(
        [s.shape[1] for s in xs], task.num_outputs, config, 0 if ex is None else ex.shape[1]
    )

    def forward(m: torch.nn.Module, idx: np.ndarray) -> torch.Tensor:
        dev = _device_of(m)
        e = None if ex is None else ex[idx].to(dev)
        return m([x[idx].to(dev) for x in xs], e)

    return run_neural(model, forward, task, split, settings, device, "topoformer")


def gin_fold(
    data: Sequence[Any], in_channels: int, task: Task, split: FoldSplit,
    settings: TrainSettings, device: str, hidden: int = 64, layers: int = 4,
) -> tuple[Selection, list[dict[str, float]]]:  # fmt: skip
    """torch_geometric's GIN on a list of ``Data`` graphs."""
    from topoformer.baselines import GINModel, import_pyg

    import_pyg()
    from torch_geometric.data import Batch

    seed_everything(split.seed)
    model = GINModel(in_channels, task.num_outputs, hidden, layers)

    def forward(m: torch.nn.Module, idx: np.ndarray) -> torch.Tensor:
        return m(Batch.from_data_list([data[i] for i in idx]).to(_device_of(m)))

    return run_neural(model, forward, task, split, settings, device, "gin")


def mlp_fold(
    features: np.ndarray, task: Task, split: FoldSplit, settings: TrainSettings, device: str,
) -> tuple[Selection, list[dict[str, float]]]:  # fmt: skip
    """An MLP on fixed per-graph features (standardised on `split.fit`)."""
    from topoformer.baselines import MLP

    seed_everything(split.seed)
    mu, sd = features[split.fit].mean(0), features[split.fit].std(0) + 1e-8
    x = torch.as_tensor((features - mu) / sd, dtype=torch.float32)
    model = MLP(x.shape[1], task.num_outputs)

    def forward(m: torch.nn.Module, idx: np.ndarray) -> torch.Tensor:
        return m(x[idx].to(_device_of(m)))

    return run_neural(model, forward, task, split, settings, device, "mlp")
