"""Deliberately NON-invariant models: they see raw lab-frame coordinates or orientations, so
they can exploit orientation bias (paper §4, Table/figure "original vs rotated")."""

from __future__ import annotations

from shared_core.data import require_extra

try:
    import torch
    from torch import nn
except ModuleNotFoundError:  # torch itself missing: the extra's one line, an ImportError
    require_extra("orient-bias", "torch", "torch", "orient_bias.model", error=ModuleNotFoundError)
    raise  # torch is there: another module is missing

__all__ = ["OrientationMLP", "PointCloudNet"]


class PointCloudNet(nn.Module):
    """A small PointNet/DeepSets classifier on raw coordinates: per-atom MLP φ([x_i, e(z_i)]),
    masked sum and max pooling, head ρ. Not rotation-invariant by construction.

    The paper uses a 238-parameter non-equivariant MPNN with identity local frames; this is a
    graph-free stand-in of the same kind (raw direction components enter the first layer).
    Inputs: positions ``(B, N, 3)``, numbers ``(B, N)`` (0 = padding). Output: ``(B, out)``.
    """

    def __init__(self, hidden: int = 64, embed: int = 8, out: int = 1, max_z: int = 119) -> None:
        super().__init__()
        self.embed = nn.Embedding(max_z, embed, padding_idx=0)
        self.phi = nn.Sequential(
            nn.Linear(3 + embed, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU()
        )
        self.rho = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.SiLU(), nn.Linear(hidden, out))

    def forward(self, positions: torch.Tensor, numbers: torch.Tensor) -> torch.Tensor:
        if positions.ndim != 3 or positions.shape[-1] != 3:
            raise ValueError(f"positions: expected (B, N, 3), got {tuple(positions.shape)}")
        if numbers.shape != positions.shape[:2]:
            raise ValueError(
                f"numbers: expected {tuple(positions.shape[:2])}, got {tuple(numbers.shape)}"
            )
        weight = self.embed.weight
        if positions.dtype != weight.dtype:
            raise TypeError(
                f"positions: expected dtype {weight.dtype} like the model's parameters, got "
                f"{positions.dtype} (cast the input or the model)"
            )
        if numbers.dtype.is_floating_point or numbers.dtype == torch.bool:
            raise TypeError(f"numbers: expected integer atomic numbers, got {numbers.dtype}")
        if numbers.numel() and (int(numbers.min()) < 0 or int(numbers.max()) >= len(weight)):
            raise ValueError(
                f"numbers: expected atomic numbers in 0..{len(weight) - 1} (0 = padding), got "
                f"{int(numbers.min())}..{int(numbers.max())}"
            )
        mask = (numbers > 0).unsqueeze(-1)
        h = self.phi(torch.cat([positions, self.embed(numbers)], -1))
        total = (h * mask).sum(1)
        peak = h.masked_fill(~mask, float("-inf")).amax(1)
        return self.rho(torch.cat([total, peak], -1))


class OrientationMLP(nn.Module):
    """MLP regressor whose ONLY input is the orientation (6D: PC1 and PC2 in the lab frame), as
    in the paper's orientation-only experiment (256 units x 4 layers, SiLU)."""

    def __init__(self, in_dim: int = 6, hidden: int = 256, depth: int = 4, out: int = 1) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        d = in_dim
        for _ in range(depth):
            layers += [nn.Linear(d, hidden), nn.SiLU()]
            d = hidden
        layers.append(nn.Linear(d, out))
        self.net = nn.Sequential(*layers)
        self.in_dim = in_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 2 or x.shape[1] != self.in_dim:
            raise ValueError(f"x: expected (B, {self.in_dim}), got {tuple(x.shape)}")
        if x.dtype != self.net[0].weight.dtype:
            raise TypeError(
                f"x: expected dtype {self.net[0].weight.dtype} like the model's parameters, "
                f"got {x.dtype}"
            )
        return self.net(x)
