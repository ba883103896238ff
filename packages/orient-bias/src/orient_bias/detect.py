"""Learned orientation detection (paper §3.1): train the rotation-variant MPNN to tell published
poses from randomly rotated ones, with the robustness perturbations.

Protocol of the official notebook (``demo_qm9.ipynb``, step 5) and its transforms
(``mol_aligned/data/custom_transforms.py``), applied afresh every time a molecule is drawn:

1. jitter: Gaussian noise of standard deviation `noise` Å on every coordinate
   (``RandomJitter``; it adds ``sigma_max`` noise);
2. pre-rotation: a Haar rotation with angle <= `pre_rotation` degrees about the centroid
   (``UniformRandomRotateAngleBounded``);
3. centre, then with probability `p_rotate` a Haar rotation, label 1; else label 0
   (``UniformRandomRotate(p=0.5)``).

Training: BCE on the logit, AdamW (lr 5e-4, weight decay 5e-3), gradient clipping 0.5,
batch 128 (``build_default_classifier``), through `shared_core.train.fit`. Evaluation: every
test molecule once unrotated and once rotated (perturbed the same way), so the ROC-AUC is
paired per molecule (`pair_bootstrap_ci`). torch is the ``torch`` extra.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from orient_bias.classifiers import pair_bootstrap_ci, pair_permutation_pvalue
from orient_bias.frames import Poses
from orient_bias.rotations import random_rotations, random_rotations_bounded
from orient_bias.training import TrainConfig
from shared_core.data import require_extra

if TYPE_CHECKING:
    from torch import nn

__all__ = ["DetectConfig", "detect_bias", "perturb", "score_detector", "train_detector"]


@dataclass(frozen=True)
class DetectConfig:
    """Perturbations (`noise` in Å, `pre_rotation` in degrees) and the training recipe;
    `elements`: the MPNN's one-hot atom types (None: QM9's H, C, N, O, F, the paper's)."""

    noise: float = 0.0
    pre_rotation: float = 0.0
    p_rotate: float = 0.5
    epochs: int = 10
    batch_size: int = 128
    seed: int = 0
    device: str = "cpu"
    elements: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.noise, int | float) and 0 <= self.noise < math.inf):
            raise ValueError(f"noise: expected a standard deviation >= 0 in Å, got {self.noise!r}")
        if not (isinstance(self.pre_rotation, int | float) and 0 <= self.pre_rotation <= 180):
            raise ValueError(
                f"pre_rotation: expected a maximum angle in [0, 180] degrees, got "
                f"{self.pre_rotation!r}"
            )
        if not (isinstance(self.p_rotate, int | float) and 0 < self.p_rotate < 1):
            raise ValueError(f"p_rotate: expected a probability in (0, 1), got {self.p_rotate!r}")

    @property
    def train_config(self) -> TrainConfig:
        return TrainConfig(
            epochs=self.epochs, batch_size=self.batch_size, lr=5e-4, weight_decay=5e-3,
            grad_clip=0.5, seed=self.seed, device=self.device,
        )  # fmt: skip


def perturb(
    positions: np.ndarray,
    mask: np.ndarray,
    noise: float,
    pre_rotation: float,
    rotate: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Jitter, pre-rotate, centre, and Haar-rotate the rows where `rotate` is True.

    positions ``(B, N, 3)``, mask ``(B, N)`` (real atoms), rotate ``(B,)`` bool. Returns
    float64 positions with the padding at the origin.
    """
    B = len(positions)
    m = mask[..., None]
    x = positions + (noise * rng.standard_normal(positions.shape) if noise > 0 else 0.0)
    c = (x * m).sum(1) / np.maximum(mask.sum(1), 1)[:, None]  # (B, 3) centroid
    x = (x - c[:, None]) * m
    if pre_rotation > 0:
        x = np.matmul(x, np.swapaxes(random_rotations_bounded(B, pre_rotation, rng), 1, 2))
    R = random_rotations(B, rng)
    R[~rotate] = np.eye(3)
    return np.matmul(x, np.swapaxes(R, 1, 2)) * m


def train_detector(
    poses: Poses, bonds: np.ndarray, cfg: DetectConfig, desc: str = "mpnn train"
) -> nn.Module:
    """Train a fresh `RotationVariantMPNN` on `poses` (as published) and return it (eval mode)."""
    require_extra("orient-bias", "torch", "torch", "the MPNN detector")
    import torch

    from orient_bias.mpnn import RotationVariantMPNN
    from shared_core.train import fit, step_generator

    if not isinstance(cfg, DetectConfig):
        raise TypeError(f"cfg: expected a DetectConfig, got {type(cfg).__name__}")
    if bonds.shape != poses.numbers.shape + poses.numbers.shape[1:]:
        raise ValueError(
            f"bonds: expected shape {poses.numbers.shape + poses.numbers.shape[1:]}, got {bonds.shape}"
        )
    n = len(poses)
    tc = cfg.train_config
    per_epoch = math.ceil(n / tc.batch_size)
    mask = poses.mask
    numbers = torch.as_tensor(poses.numbers.astype(np.int64))
    bond_t = torch.as_tensor(bonds.astype(np.int64))

    def batch_fn(step: int) -> tuple[torch.Tensor, ...]:
        epoch, k = divmod(step, per_epoch)
        perm = torch.randperm(n, generator=step_generator(cfg.seed, epoch)).numpy()
        idx = np.sort(perm[k * tc.batch_size : (k + 1) * tc.batch_size])
        rng = np.random.default_rng([cfg.seed, step])
        rotate = rng.random(len(idx)) < cfg.p_rotate
        x = perturb(poses.positions[idx], mask[idx], cfg.noise, cfg.pre_rotation, rotate, rng)
        label = torch.as_tensor(rotate, dtype=torch.float32)[:, None]
        return torch.as_tensor(x, dtype=torch.float32), numbers[idx], bond_t[idx], label

    torch.manual_seed(cfg.seed)
    model = (
        RotationVariantMPNN()
        if cfg.elements is None
        else RotationVariantMPNN(elements=cfg.elements)
    )

    def loss(m: torch.nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return torch.nn.functional.binary_cross_entropy_with_logits(m(*batch[:3]), batch[3])

    fit(model, loss, batch_fn, tc.fit_config(n), desc=desc, device=cfg.device)
    model.eval()
    return model


def score_detector(
    model: nn.Module,
    poses: Poses,
    bonds: np.ndarray,
    cfg: DetectConfig,
    seed: int,
    batch_size: int = 512,
) -> tuple[np.ndarray, np.ndarray]:
    """Rotation probabilities ``(s0, s1)`` of every molecule unrotated and Haar-rotated, each
    copy perturbed (noise, pre-rotation) independently with generator `seed`."""
    require_extra("orient-bias", "torch", "torch", "the MPNN detector")
    import torch

    rng = np.random.default_rng(seed)
    mask = poses.mask
    dev = next(model.parameters()).device
    scores = []
    for rotate in (False, True):
        flags = np.full(len(poses), rotate)
        x = perturb(poses.positions, mask, cfg.noise, cfg.pre_rotation, flags, rng)
        out = []
        with torch.no_grad():
            for s in range(0, len(poses), batch_size):
                sl = slice(s, s + batch_size)
                logit = model(
                    torch.as_tensor(x[sl], dtype=torch.float32, device=dev),
                    torch.as_tensor(poses.numbers[sl].astype(np.int64), device=dev),
                    torch.as_tensor(bonds[sl].astype(np.int64), device=dev),
                )
                out.append(torch.sigmoid(logit[:, 0]).double().cpu().numpy())
        scores.append(np.concatenate(out))
    return scores[0], scores[1]


def detect_bias(
    poses: Poses,
    bonds: np.ndarray,
    train_idx: np.ndarray,
    test_idx: np.ndarray,
    cfg: DetectConfig,
    n_bootstrap: int = 500,
    n_permutations: int = 2000,
) -> dict[str, float]:
    """Finding 1 with the paper's MPNN: train on the `train_idx` molecules, score every
    `test_idx` molecule as published and Haar-rotated; the paired ROC-AUC with its bootstrap
    95% CI, the within-pair permutation p-value and the accuracy at 0.5.

    poses ``(B, N, 3)`` padded, bonds ``(B, N, N)`` (`orient_bias.bonds.bond_matrix`).
    """
    model = train_detector(poses.subset(train_idx), bonds[train_idx], cfg, desc="mpnn train")
    s0, s1 = score_detector(model, poses.subset(test_idx), bonds[test_idx], cfg, cfg.seed + 7)
    auc, lo, hi = pair_bootstrap_ci(s0, s1, n_bootstrap, seed=cfg.seed)
    p = pair_permutation_pvalue(s0, s1, n_permutations, seed=cfg.seed)
    acc = float(((s0 < 0.5).sum() + (s1 >= 0.5).sum()) / (2 * len(s0)))
    return {
        "auc": auc, "ci_low": lo, "ci_high": hi, "p_value": p, "accuracy": acc,
        "epochs": float(cfg.epochs),
    }  # fmt: skip
