"""Finding 1: a simple classifier separates published poses from randomly rotated ones.

Models (`ClassifyConfig.models`): ``"mpnn"``, the paper's 238-parameter rotation-variant
MPNN (`orient_bias.mpnn`, trained as `orient_bias.detect` trains it: fresh rotations with
p = 0.5 each epoch), and our additions: logistic regression and gradient boosting on
`orientation_features`, and the non-invariant `PointCloudNet` on raw coordinates, trained on
a balanced set (every molecule once as published (0), once under a fixed Haar rotation (1)).
All are scored on the same test molecules (80/20 split by molecule), each once as published
and once rotated, so the AUC is paired. Control: the same pipeline on a copy of the dataset
that was randomly rotated first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from orient_bias.classifiers import fit_feature_classifier, pair_bootstrap_ci
from orient_bias.detect import DetectConfig, score_detector, train_detector
from orient_bias.features import orientation_features
from orient_bias.frames import Poses, centre
from orient_bias.model import PointCloudNet
from orient_bias.rotations import random_rotations
from orient_bias.training import TrainConfig, predict, train
from shared_core.data import split_indices

MODELS = ("mpnn", "logistic", "hgb", "pointcloud")
MPNN_LABEL = "MPNN, the paper's (238 parameters)"


@dataclass(frozen=True)
class ClassifyConfig:
    models: tuple[str, ...] = MODELS
    test_fraction: float = 0.2
    mpnn_epochs: int = 10
    net_epochs: int = 20
    net_hidden: int = 64
    n_bootstrap: int = 500
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self) -> None:
        bad = [m for m in self.models if m not in MODELS]
        if bad or not self.models:
            raise ValueError(
                f"models: expected a non-empty subset of {MODELS}, got {self.models!r}"
            )


def _row(dataset: str, model: str, s0: np.ndarray, s1: np.ndarray, cfg: ClassifyConfig) -> dict:
    auc, lo, hi = pair_bootstrap_ci(s0, s1, cfg.n_bootstrap, seed=cfg.seed)
    acc = float(((s0 < 0.5).sum() + (s1 >= 0.5).sum()) / (2 * len(s0)))
    return {
        "dataset": dataset,
        "model": model,
        "accuracy": acc,
        "roc_auc": auc,
        "auc_ci_low": lo,
        "auc_ci_high": hi,
        "chance_in_ci": bool(lo <= 0.5 <= hi),
    }


def mpnn_row(
    poses: Poses, bonds: np.ndarray, dataset: str, cfg: ClassifyConfig, detect: DetectConfig
) -> dict:
    """Train the paper's MPNN on the training molecules under `detect`'s perturbations and
    score the test molecules (the split of `classify`)."""
    train_idx, test_idx = split_indices(
        len(poses), (1 - cfg.test_fraction, cfg.test_fraction), cfg.seed
    )
    model = train_detector(
        poses.subset(train_idx), bonds[train_idx], detect, desc=f"mpnn train ({dataset})"
    )
    s0, s1 = score_detector(model, poses.subset(test_idx), bonds[test_idx], detect, cfg.seed + 7)
    return _row(dataset, MPNN_LABEL, s0, s1, cfg)


def classify(
    poses: Poses, dataset: str, cfg: ClassifyConfig, bonds: np.ndarray | None = None
) -> list[dict]:
    """The models of `cfg` on one dataset; returns one result row per model. `bonds`
    (`orient_bias.bonds.bond_matrix`) is needed for ``"mpnn"``."""
    rows = []
    if "mpnn" in cfg.models:
        if bonds is None:
            raise ValueError("bonds: the 'mpnn' model needs the bond matrix, got None")
        detect = DetectConfig(epochs=cfg.mpnn_epochs, seed=cfg.seed, device=cfg.device)
        rows.append(mpnn_row(poses, bonds, dataset, cfg, detect))
    rng = np.random.default_rng(cfg.seed)
    n = len(poses)
    original = centre(poses)
    rotated = original.rotated(random_rotations(n, rng))
    X0, X1 = orientation_features(original), orientation_features(rotated)
    train_idx, test_idx = split_indices(n, (1 - cfg.test_fraction, cfg.test_fraction), cfg.seed)
    X = np.concatenate([X0[train_idx], X1[train_idx]])
    y = np.r_[np.zeros(len(train_idx)), np.ones(len(train_idx))]
    for kind, label in (
        ("logistic", "logistic regression (features)"),
        ("hgb", "gradient boosting (features)"),
    ):
        if kind not in cfg.models:
            continue
        m = fit_feature_classifier(X, y, kind, cfg.seed)
        rows.append(
            _row(
                dataset,
                label,
                m.predict_proba(X0[test_idx])[:, 1],
                m.predict_proba(X1[test_idx])[:, 1],
                cfg,
            )
        )
    if "pointcloud" not in cfg.models:
        return rows
    pos = np.concatenate([original.positions[train_idx], rotated.positions[train_idx]]).astype(
        np.float32
    )
    num = np.concatenate([poses.numbers[train_idx]] * 2)
    torch.manual_seed(cfg.seed)
    net = PointCloudNet(hidden=cfg.net_hidden)
    tc = TrainConfig(
        epochs=cfg.net_epochs, batch_size=256, seed=cfg.seed, device=cfg.device, lr=2e-3
    )
    trained, _ = train(
        net, (pos, num), y.astype(np.float32)[:, None],
        torch.nn.functional.binary_cross_entropy_with_logits, tc, desc=f"point-cloud net train ({dataset})",
    )  # fmt: skip

    def score(p: Poses) -> np.ndarray:
        logits = predict(trained, (p.positions[test_idx].astype(np.float32), p.numbers[test_idx]))
        return 1.0 / (1.0 + np.exp(-logits[:, 0]))

    rows.append(
        _row(dataset, "point-cloud net (coordinates)", score(original), score(rotated), cfg)
    )
    return rows


def run(poses: Poses, cfg: ClassifyConfig, bonds: np.ndarray | None = None) -> list[dict]:
    """Published poses, then the control: the same molecules randomly rotated first."""
    control = centre(poses).rotated(random_rotations(len(poses), cfg.seed + 1000))
    return classify(poses, "QM9 as published", cfg, bonds) + classify(
        control, "QM9 pre-rotated (control)", cfg, bonds
    )
