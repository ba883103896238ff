"""Random-rotation data augmentation for torch datasets: the remedy the paper recommends for
non-equivariant models (each sample seen under a fresh Haar rotation)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared_core.data import require_extra

try:
    import torch
except ModuleNotFoundError:  # torch itself missing: the extra's one line, an ImportError
    require_extra("orient-bias", "torch", "torch", "orient_bias.augment", error=ModuleNotFoundError)
    raise  # torch is there: another module is missing

from orient_bias.rotations import random_rotations_torch

__all__ = ["RandomRotation", "RotatedDataset"]


class RandomRotation:
    """Rotate positions by a fresh Haar-uniform rotation on each call.

    Accepts a tensor ``(n, 3)`` (one molecule) or ``(B, N, 3)`` (one rotation per molecule),
    or a mapping whose `key` entry is such a tensor (other entries pass through; forces or
    other vector entries listed in `vector_keys` are rotated with the same matrix).
    `centre` subtracts the centroid of the atoms first (padding rows, all zero with
    ``mask``, are kept at zero when a boolean ``mask`` is passed).
    """

    def __init__(
        self,
        key: str = "positions",
        vector_keys: tuple[str, ...] = (),
        centre: bool = True,
        generator: torch.Generator | None = None,
    ) -> None:
        self.key, self.vector_keys, self.centre, self.generator = (
            key,
            vector_keys,
            centre,
            generator,
        )

    def rotate(
        self, x: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(rotated x, R)``; R is ``(3, 3)`` or ``(B, 3, 3)``."""
        if not isinstance(x, torch.Tensor) or x.shape[-1] != 3 or x.ndim not in (2, 3):
            raise ValueError(
                f"positions: expected a tensor of shape (n, 3) or (B, N, 3), got "
                f"{getattr(x, 'shape', type(x).__name__)}"
            )
        batched = x.ndim == 3
        xb = x if batched else x[None]
        if mask is not None and tuple(mask.shape) not in (tuple(x.shape[:-1]), tuple(xb.shape[:2])):
            raise ValueError(
                f"mask: expected shape {tuple(x.shape[:-1])} like positions, got {tuple(mask.shape)}"
            )
        if not x.dtype.is_floating_point:
            raise TypeError(f"positions: expected a floating-point tensor, got {x.dtype}")
        m = (
            torch.ones(xb.shape[:2], dtype=torch.bool, device=x.device)
            if mask is None
            else mask.reshape(xb.shape[:2])
        )
        mf = m.to(x.dtype)[..., None]
        if self.centre:
            c = (xb * mf).sum(1, keepdim=True) / mf.sum(1, keepdim=True).clamp_min(1)
            xb = (xb - c) * mf
        R = random_rotations_torch(len(xb), self.generator, dtype=x.dtype, device=x.device)
        out = torch.einsum("bij,bnj->bni", R, xb)
        return (out if batched else out[0]), (R if batched else R[0])

    def __call__(self, sample: Any) -> Any:
        if isinstance(sample, Mapping):
            if self.key not in sample:
                raise ValueError(f"sample: expected a {self.key!r} entry, got keys {list(sample)}")
            out = dict(sample)
            out[self.key], R = self.rotate(sample[self.key], sample.get("mask"))
            for k in self.vector_keys:
                v = sample[k]
                out[k] = torch.einsum("...ij,...nj->...ni", R, v)
            return out
        return self.rotate(sample)[0]


class RotatedDataset(torch.utils.data.Dataset):
    """Wrap a map-style dataset so every item passes through `RandomRotation` (or any transform)."""

    def __init__(self, dataset: Any, transform: RandomRotation | None = None) -> None:
        self.dataset, self.transform = dataset, transform or RandomRotation()

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i: int) -> Any:
        return self.transform(self.dataset[i])
