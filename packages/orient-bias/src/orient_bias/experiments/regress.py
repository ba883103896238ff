"""Finding 2: chemical properties regressed from the orientation ALONE.

Input: the 6D orientation of each pose relative to its principal-axes frame (PC1 and PC2 in
lab coordinates; no positions, no elements). Model: `OrientationMLP` (256 x 4, SiLU), all
targets at once on standardised values, plus gradient boosting per target as a second
learner. Baselines: the mean predictor (R² = 0) and the same models trained on randomly
rotated poses (which must fall to R² ≈ 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from orient_bias.classifiers import fit_feature_regressor
from orient_bias.frames import Poses, principal_frames
from orient_bias.model import OrientationMLP
from orient_bias.rotations import random_rotations, rotation_6d
from orient_bias.training import TrainConfig, predict, train
from shared_core.data import split_indices
from shared_core.metrics import mae, r2_score

HARTREE_EV = 27.211386245988
UNITS = {
    "gap": ("eV", HARTREE_EV),
    "mu": ("D", 1.0),
    "zpve": ("meV", 1000 * HARTREE_EV),
    "U0": ("eV", HARTREE_EV),
}


@dataclass(frozen=True)
class RegressConfig:
    targets: tuple[str, ...] = ("gap", "mu", "zpve")
    test_fraction: float = 0.2
    epochs: int = 30
    hidden: int = 256
    depth: int = 4
    seed: int = 0
    device: str = "cpu"


def _fit(
    X: np.ndarray, Y: np.ndarray, tr: np.ndarray, te: np.ndarray, cfg: RegressConfig, label: str
) -> dict[str, np.ndarray]:
    mu, sd = Y[tr].mean(0), Y[tr].std(0)
    Z = ((Y - mu) / sd).astype(np.float32)
    torch.manual_seed(cfg.seed)
    net = OrientationMLP(6, cfg.hidden, cfg.depth, out=Y.shape[1])
    tc = TrainConfig(
        epochs=cfg.epochs, seed=cfg.seed, device=cfg.device, lr=1e-3, weight_decay=1e-4
    )
    trained, _ = train(
        net,
        (X[tr].astype(np.float32),),
        Z[tr],
        torch.nn.functional.mse_loss,
        tc,
        desc=f"orientation MLP train ({label})",
    )
    mlp = predict(trained, (X[te].astype(np.float32),)) * sd + mu
    hgb = np.stack(
        [
            fit_feature_regressor(X[tr], Y[tr, j], "hgb", cfg.seed).predict(X[te])
            for j in range(Y.shape[1])
        ],
        1,
    )
    return {"MLP (6D orientation)": mlp, "gradient boosting (6D orientation)": hgb}


def run(poses: Poses, Y: np.ndarray, cfg: RegressConfig) -> list[dict]:
    """Rows of (target, input poses, model, R², MAE, MAE of the mean predictor)."""
    n = len(poses)
    tr, te = split_indices(n, (1 - cfg.test_fraction, cfg.test_fraction), cfg.seed)
    X_pub = rotation_6d(principal_frames(poses).axes)
    rotated = poses.rotated(random_rotations(n, cfg.seed + 2000))
    X_rot = rotation_6d(principal_frames(rotated).axes)
    rows = []
    for label, X in (("published", X_pub), ("randomly rotated (control)", X_rot)):
        preds = _fit(X, Y, tr, te, cfg, label)
        for j, t in enumerate(cfg.targets):
            unit, f = UNITS.get(t, ("", 1.0))
            base = mae(Y[te, j] * f, np.full(len(te), Y[tr, j].mean() * f))
            for model, P in preds.items():
                rows.append({
                    "target": f"{t} ({unit})", "poses": label, "model": model,
                    "r2": r2_score(Y[te, j], P[:, j]), "mae": mae(Y[te, j] * f, P[:, j] * f),
                    "mae_mean_predictor": base,
                })  # fmt: skip
    return rows
