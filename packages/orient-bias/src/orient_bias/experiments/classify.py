"""Finding 1: a simple classifier separates published poses from randomly rotated ones.

Balanced set: every molecule once as published (0) and once under a fresh Haar rotation (1),
both centred; split by molecule (80/20). Models: logistic regression and gradient boosting on
`orientation_features`, and the non-invariant `PointCloudNet` on raw coordinates. Control:
the same pipeline on a copy of the dataset that was randomly rotated first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from orient_bias.classifiers import fit_feature_classifier, pair_bootstrap_ci
from orient_bias.features import orientation_features
from orient_bias.frames import Poses, centre
from orient_bias.model import PointCloudNet
from orient_bias.rotations import random_rotations
from orient_bias.train import TrainConfig, predict, train
from shared_core.data import split_indices


@dataclass(frozen=True)
class ClassifyConfig:
    test_fraction: float = 0.2
    net_epochs: int = 20
    net_hidden: int = 64
    n_bootstrap: int = 500
    seed: int = 0
    device: str = "cpu"


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


def classify(poses: Poses, dataset: str, cfg: ClassifyConfig) -> list[dict]:
    """All three models on one dataset; returns one result row per model."""
    rng = np.random.default_rng(cfg.seed)
    n = len(poses)
    original = centre(poses)
    rotated = original.rotated(random_rotations(n, rng))
    X0, X1 = orientation_features(original), orientation_features(rotated)
    train_idx, test_idx = split_indices(n, (1 - cfg.test_fraction, cfg.test_fraction), cfg.seed)
    X = np.concatenate([X0[train_idx], X1[train_idx]])
    y = np.r_[np.zeros(len(train_idx)), np.ones(len(train_idx))]
    rows = []
    for kind, label in (
        ("logistic", "logistic regression (features)"),
        ("hgb", "gradient boosting (features)"),
    ):
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


def run(poses: Poses, cfg: ClassifyConfig) -> list[dict]:
    """Published poses, then the control: the same molecules randomly rotated first."""
    control = centre(poses).rotated(random_rotations(len(poses), cfg.seed + 1000))
    return classify(poses, "QM9 as published", cfg) + classify(
        control, "QM9 pre-rotated (control)", cfg
    )
