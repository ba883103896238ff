"""Sample-quality scorer for digits trained here: a small digit classifier (Frechet distance in its
features). Text samples are scored by `masked_diffusion.CausalCharLM` (generative perplexity).

The paper scores OWT samples with GPT-2 Large and ImageNet samples with FID (Inception features);
at this scale both are replaced by models of the same kind trained on the same corpus.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "DigitClassifier",
    "train_classifier",
]


class DigitClassifier(nn.Module):
    """MLP on a quantised 8x8 digit (64 tokens in [0, levels)); `features` is the last hidden layer."""

    def __init__(
        self, levels: int, n_pixels: int = 64, hidden: int = 128, d_feat: int = 64
    ) -> None:
        super().__init__()
        self.levels = levels
        self.body = nn.Sequential(
            nn.Linear(n_pixels, hidden), nn.ReLU(), nn.Linear(hidden, d_feat), nn.ReLU()
        )
        self.out = nn.Linear(d_feat, 10)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x.float() / (self.levels - 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.features(x))


def train_classifier(
    x: torch.Tensor, y: torch.Tensor, levels: int, steps: int = 400, seed: int = 0
) -> DigitClassifier:
    """Full-batch AdamW (`shared_core.train.fit`, constant lr 3e-3, weight decay 1e-4 on the
    matrices) on (x (n, 64) tokens, y (n,) labels); returns the classifier in eval mode."""
    from shared_core.train import TrainConfig, fit

    torch.manual_seed(seed)
    clf = DigitClassifier(levels)
    cfg = TrainConfig(steps=steps, lr=3e-3, schedule="constant", weight_decay=1e-4,
                      betas=(0.9, 0.999), grad_clip=0.0)  # fmt: skip
    fit(
        clf, lambda m, b: F.cross_entropy(m(b[0]), b[1]), lambda step: (x, y), cfg,
        desc="digit classifier train", device=str(x.device), show_progress=False,
    )  # fmt: skip
    return clf.eval()
