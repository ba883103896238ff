"""A trained TopoFormer with everything `predict` needs, as one `shared_core.hub` folder.

`TrainedTopoFormer` holds the Topo-Scan settings and fitted thresholds, the task (classes or
the regression target's scale) and the `TopoFormer` weights; ``save_pretrained(dir)`` /
``TrainedTopoFormer.from_pretrained(dir)`` write and read it (config.json, weights,
provenance, model card). `featurise` turns graphs (+ SMILES for the ECFP branch) into the
model's inputs with the stored thresholds, so a prediction never refits anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from shared_core.hub import Pretrained
from topoformer.model import TopoFormer, TopoFormerConfig
from topoformer.topo_scan import TopoScan, minmax_scale

__all__ = ["CheckpointConfig", "TrainedTopoFormer"]


@dataclass(frozen=True)
class CheckpointConfig:
    """What a trained model needs besides its weights.

    input: ``"smiles"`` (molecules: per-molecule min-max scaled tokens, as the authors'
    molecular script) or ``"tu"`` (graphs: raw tokens). thresholds: per filtration, in the
    order of `filtrations`. classes: the class labels as strings (classification), empty for
    regression, whose predictions are ``out * target_std + target_mean``.
    """

    input: str = "smiles"
    filtrations: tuple[str, ...] = ("ricci", "atomic_weight")
    n_intervals: int = 20
    m: int = 2
    thresholds: tuple[tuple[float, ...], ...] = ()
    ecfp_bits: int = 0
    task: str = "regression"
    classes: tuple[str, ...] = ()
    target: str = "y"
    target_mean: float = 0.0
    target_std: float = 1.0
    model: TopoFormerConfig = field(default_factory=TopoFormerConfig)

    @property
    def num_outputs(self) -> int:
        return len(self.classes) if self.task == "classification" else 1


class TrainedTopoFormer(nn.Module, Pretrained):  # type: ignore[misc]
    """`TopoFormer` + its Topo-Scan thresholds and task: ``model.predict(graphs, smiles)``."""

    def __init__(self, config: CheckpointConfig) -> None:
        super().__init__()
        self.config = config
        tokens = [len(th) - config.m for th in config.thresholds]
        self.net = TopoFormer(tokens, config.num_outputs, config.model, config.ecfp_bits)

    def scanner(self) -> TopoScan:
        """A fitted `TopoScan` with the stored thresholds."""
        c = self.config
        scan = TopoScan(c.filtrations, c.n_intervals, c.m)
        scan.thresholds_ = {
            n: np.asarray(th, dtype=np.float64)
            for n, th in zip(c.filtrations, c.thresholds, strict=True)
        }
        return scan

    def forward(
        self, sequences: Sequence[torch.Tensor], extra: torch.Tensor | None = None
    ) -> torch.Tensor:
        return self.net(sequences, extra)  # type: ignore[no-any-return]

    @torch.no_grad()
    def predict_inputs(
        self, sequences: Sequence[np.ndarray], extra: np.ndarray | None = None
    ) -> np.ndarray:
        """Raw outputs ``(N, num_outputs)``: class probabilities, or the target in its units."""
        self.eval()
        out = self.net(
            [torch.as_tensor(s, dtype=torch.float32) for s in sequences],
            None if extra is None else torch.as_tensor(extra, dtype=torch.float32),
        )
        if self.config.task == "classification":
            return torch.softmax(out, 1).double().numpy()
        return out.double().numpy() * self.config.target_std + self.config.target_mean


def featurise(
    scan: TopoScan, graphs: Sequence[Any], input_kind: str, smiles: Sequence[str], ecfp_bits: int
) -> tuple[list[np.ndarray], np.ndarray | None]:
    """The model's inputs: token sequences ``[(N, T_f, 4)]`` (min-max scaled per molecule for
    SMILES input) and the ``(N, ecfp_bits)`` fingerprints (None without the ECFP branch)."""
    seqs = scan.transform(graphs)
    xs = [seqs[n] for n in scan.filtrations]
    if input_kind == "smiles":
        xs = [minmax_scale(x) for x in xs]
    extra = None
    if ecfp_bits:
        from topoformer.data import ecfp

        extra = ecfp(smiles, n_bits=ecfp_bits)
    return xs, extra
