"""The reproduction's image domains, offline: sklearn's digits and scikit-image's LFW subset.

Both are returned as ``(images (N, 1, side, side) float32 in [-1, 1], labels (N,) int64)``
with a fixed train/test split (`split_indices`, seed 0, 80/20):

- ``"digits"``: `shared_core.data.load("digits")` (1,797 8x8 images, 10 classes), resized
  bilinearly to `side`.
- ``"faces"``: `skimage.data.lfw_subset()` (200 25x25 grey images; the first 100 are faces,
  the other 100 non-faces: label 1 face, 0 non-face), resized with antialiasing to `side`.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from shared_core.data import load, require_extra, split_indices

DOMAINS = ("digits", "faces")
NUM_CLASSES = {"digits": 10, "faces": 2}


def _resize(x: np.ndarray, side: int) -> torch.Tensor:
    t = torch.as_tensor(x, dtype=torch.float32).unsqueeze(1)
    if t.shape[-1] != side:
        t = F.interpolate(
            t, size=(side, side), mode="bilinear", antialias=True, align_corners=False
        )
    return t.clamp(0.0, 1.0) * 2.0 - 1.0


def load_domain(
    name: str, side: int = 16, split: str = "train"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Images and labels of domain `name` (``"digits"`` or ``"faces"``) at `side` x `side`."""
    if name not in DOMAINS:
        raise ValueError(f"name: expected one of {DOMAINS}, got {name!r}")
    if split not in ("train", "test", "all"):
        raise ValueError(f"split: expected 'train', 'test' or 'all', got {split!r}")
    if not isinstance(side, int) or isinstance(side, bool) or side < 2:
        raise ValueError(f"side: expected an int >= 2, got {side!r}")
    if name == "digits":
        require_extra("toprovar", "data", "sklearn", "the digits domain")
        images, labels = load("digits")
        x = np.asarray(images, dtype=np.float64) / 16.0
        y = np.asarray(labels, dtype=np.int64)
    else:
        require_extra("toprovar", "data", "skimage", "the faces domain (LFW subset)")
        from skimage.data import lfw_subset

        x = np.asarray(lfw_subset(), dtype=np.float64)
        y = np.r_[np.ones(100, dtype=np.int64), np.zeros(len(x) - 100, dtype=np.int64)]
    train, test = split_indices(len(x), (0.8, 0.2), seed=0)
    pick = {"train": train, "test": test, "all": np.arange(len(x))}[split]
    return _resize(x[pick], side), torch.as_tensor(y[pick])
