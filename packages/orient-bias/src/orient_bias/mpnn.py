"""The paper's orientation classifier: a 238-parameter rotation-VARIANT message-passing network.

Built as the official code builds it (sciai-lab/are-my-molecules-aligned,
``mol_aligned/mpnn_classifier.py::build_default_net``, with the ``tensor_frames`` blocks it
imports: ``BesselEmbedding``, ``AxisWiseBesselEmbedding``, ``EnvelopePoly``, ``EdgeConv`` in a
``PointNetEncoder``), on padded batches with dense pair masks instead of a graph (QM9 has at most
29 atoms, so all pairs fit; the sums and maxima are the same as over the radius graph):

1. edge embedding over the radius graph (5 Å, no self loops), d_ij = x_j - x_i:
   e_ij = MLP_e([Bessel(|d_ij|), AxisBessel(d_ij / |d_ij|), bond_ij]) with 2 radial and 1
   angular frequency (learnable), polynomial envelope p = 5, bond_ij one-hot
   (single, double, triple, aromatic, radius-only edge);
2. node embedding f_i = W_1 onehot(z_i) + Σ_j W_2 e_ij (width 4);
3. one PointNet step over all atoms within 10 Å (self included): f_i <- max_j
   MLP_1([f_j, f_i, Gauss(|d_ij|), d_ij / |d_ij|]) (2 fixed Gaussians, BatchNorm over edges);
4. graph LayerNorm, a per-atom MLP 4 -> 4 -> 2 -> 1 (SiLU), sum over atoms: one logit.

The axis-wise angular embedding sees the DIRECTION components of x_j - x_i, so the network is
translation invariant but not rotation invariant: it can tell orientations apart (paper §3.1:
"f_i^(k+1) = ⊕_j MLP(f_j^(k), emb(x_i - x_j))"). torch is the ``torch`` extra.
"""

from __future__ import annotations

import math

from shared_core.data import require_extra

try:
    import torch
    from torch import nn
except ModuleNotFoundError:  # torch itself missing: the extra's one line, an ImportError
    require_extra("orient-bias", "torch", "torch", "orient_bias.mpnn", error=ModuleNotFoundError)
    raise  # torch is there: another module is missing

__all__ = ["BOND_CLASSES", "QM9_ELEMENTS", "RotationVariantMPNN"]

QM9_ELEMENTS = (1, 6, 7, 8, 9)
"""Atomic numbers of the one-hot node input (H, C, N, O, F), as in the official datamodule."""

BOND_CLASSES = ("single", "double", "triple", "aromatic")
"""Bond codes 1..4 of the ``bonds`` input (0: not bonded; such pairs within 5 Å are
"radius-only" edges, the fifth edge-attribute slot)."""


def _envelope(x: torch.Tensor, p: int = 5) -> torch.Tensor:
    """Polynomial envelope 1 - (p+1)(p+2)/2 x^p + p(p+2) x^(p+1) - p(p+1)/2 x^(p+2), 0 for x >= 1."""
    env = (
        1
        - (p + 1) * (p + 2) / 2 * x**p
        + p * (p + 2) * x ** (p + 1)
        - p * (p + 1) / 2 * x ** (p + 2)
    )
    return torch.where(x < 1, env, torch.zeros_like(env))


def _safe_unit(d: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """d / |d|, and 0 where |d|_1 <= 1e-6 (self pairs), as tensor_frames' safe normalise."""
    nonzero = d.abs().sum(-1, keepdim=True) > 1e-6
    return torch.where(
        nonzero, d / torch.where(nonzero, r, torch.ones_like(r)), torch.zeros_like(d)
    )


class _MaskedBatchNorm(nn.BatchNorm1d):
    """BatchNorm over the valid entries only (the edges of a graph batch)."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        out = torch.zeros_like(x)
        out[mask] = super().forward(x[mask])
        return out


class RotationVariantMPNN(nn.Module):
    """The authors' default orientation classifier (238 parameters with the defaults).

    Inputs: positions ``(B, N, 3)`` float, numbers ``(B, N)`` integer (0 = padding), bonds
    ``(B, N, N)`` integer bond codes (0 none, 1..4 `BOND_CLASSES`). Output: logits ``(B, 1)``
    (published pose = 0, randomly rotated = 1).

    Args:
        width: feature width (4 in ``build_default_net``).
        cutoff: radius of the message-passing graph in Å (5).
        pointnet_radius: radius of the PointNet step in Å (10).
        elements: atomic numbers of the one-hot node input (QM9's H, C, N, O, F).
    """

    element_index: torch.Tensor
    gauss_shift: torch.Tensor
    gauss_var: torch.Tensor

    def __init__(
        self,
        width: int = 4,
        cutoff: float = 5.0,
        pointnet_radius: float = 10.0,
        elements: tuple[int, ...] = QM9_ELEMENTS,
    ) -> None:
        super().__init__()
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise ValueError(f"width: expected a positive int, got {width!r}")
        for name, v in (("cutoff", cutoff), ("pointnet_radius", pointnet_radius)):
            if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name}: expected a positive radius in Å, got {v!r}")
        if not elements or any(not isinstance(z, int) or not 1 <= z <= 118 for z in elements):
            raise ValueError(f"elements: expected atomic numbers in 1..118, got {elements!r}")
        self.cutoff, self.pointnet_radius = float(cutoff), float(pointnet_radius)
        lookup = torch.full((119,), -1, dtype=torch.long)
        lookup[list(elements)] = torch.arange(len(elements))
        self.register_buffer("element_index", lookup, persistent=False)
        self.n_elements = len(elements)
        # 1. edge embedding: Bessel radial (2 frequencies), axis-wise Bessel angular (1 per axis)
        self.radial_freq = nn.Parameter(math.pi * torch.arange(1.0, 3.0))
        self.angular_freq = nn.Parameter(torch.full((3, 1), math.pi))
        n_edge = 2 + 3 + len(BOND_CLASSES) + 1
        self.edge_mlp = nn.Sequential(nn.Linear(n_edge, width), nn.SiLU(), nn.Linear(width, width))
        # 2. node embedding
        self.node_in = nn.Linear(len(elements), width)
        self.node_msg = nn.Linear(width, width)
        # 3. PointNet step: 2 fixed Gaussians on [0, r], width r / sqrt(-8 ln 0.5)
        self.register_buffer("gauss_shift", torch.tensor([0.0, self.pointnet_radius]))
        sigma = self.pointnet_radius / math.sqrt(-8 * math.log(0.5))
        self.register_buffer("gauss_var", torch.tensor([sigma**2 + 1e-4] * 2))
        self.pn_in = nn.Linear(2 * width + 2 + 3, width)
        self.pn_norm = _MaskedBatchNorm(width)
        self.pn_out = nn.Linear(width, width)
        # 4. graph LayerNorm and the per-atom head
        self.ln_weight = nn.Parameter(torch.ones(width))
        self.ln_bias = nn.Parameter(torch.zeros(width))
        self.head = nn.Sequential(
            nn.Linear(width, 4), nn.SiLU(), nn.Linear(4, 2), nn.SiLU(), nn.Linear(2, 1)
        )

    def _check(self, positions: torch.Tensor, numbers: torch.Tensor, bonds: torch.Tensor) -> None:
        if positions.ndim != 3 or positions.shape[-1] != 3:
            raise ValueError(f"positions: expected (B, N, 3), got {tuple(positions.shape)}")
        B, N = positions.shape[:2]
        if numbers.shape != (B, N):
            raise ValueError(f"numbers: expected {(B, N)}, got {tuple(numbers.shape)}")
        if bonds.shape != (B, N, N):
            raise ValueError(f"bonds: expected {(B, N, N)}, got {tuple(bonds.shape)}")
        dtype = self.node_in.weight.dtype
        if positions.dtype != dtype:
            raise TypeError(
                f"positions: expected dtype {dtype} like the model's parameters, got "
                f"{positions.dtype} (cast the input or the model)"
            )
        for name, t in (("numbers", numbers), ("bonds", bonds)):
            if t.dtype.is_floating_point or t.dtype == torch.bool:
                raise TypeError(f"{name}: expected an integer tensor, got {t.dtype}")
        if numbers.numel() and (int(numbers.min()) < 0 or int(numbers.max()) > 118):
            raise ValueError(
                f"numbers: expected atomic numbers in 0..118 (0 = padding), got "
                f"{int(numbers.min())}..{int(numbers.max())}"
            )
        unknown = (numbers > 0) & (self.element_index[numbers.long()] < 0)
        if bool(unknown.any()):
            raise ValueError(
                f"numbers: element {int(numbers[unknown][0])} is not one of the model's "
                f"elements {tuple(torch.nonzero(self.element_index >= 0).flatten().tolist())}"
            )
        if bonds.numel() and (int(bonds.min()) < 0 or int(bonds.max()) > len(BOND_CLASSES)):
            raise ValueError(
                f"bonds: expected codes 0..{len(BOND_CLASSES)}, got "
                f"{int(bonds.min())}..{int(bonds.max())}"
            )
        if not bool(torch.isfinite(positions).all()):
            raise ValueError("positions: contains NaN or infinite values")

    def forward(
        self, positions: torch.Tensor, numbers: torch.Tensor, bonds: torch.Tensor
    ) -> torch.Tensor:
        self._check(positions, numbers, bonds)
        real = numbers > 0  # (B, N)
        pair = real[:, :, None] & real[:, None, :]  # (B, N_i, N_j)
        d = positions[:, None, :, :] - positions[:, :, None, :]  # d[b, i, j] = x_j - x_i
        r = d.norm(dim=-1, keepdim=True)
        u = _safe_unit(d, r)
        eye = torch.eye(positions.shape[1], dtype=torch.bool, device=positions.device)
        graph = pair & ~eye & (r[..., 0] <= self.cutoff)
        # 1. edge embedding
        x = r / self.cutoff
        radial = (
            _envelope(x) * math.sqrt(2 / self.cutoff) * torch.sin(x * self.radial_freq) / (r + 1e-6)
        )
        angular = torch.sign(u) * torch.sin(u * self.angular_freq[:, 0]) / (u + 1e-6)
        onehot_bond = nn.functional.one_hot(bonds.long(), len(BOND_CLASSES) + 1)[..., 1:]
        radius_only = (bonds == 0).unsqueeze(-1)
        attr = torch.cat([onehot_bond, radius_only], -1).to(positions.dtype)
        e = self.edge_mlp(torch.cat([radial, angular, attr], -1))
        # 2. node embedding: self term + sum of messages over the 5 Å graph
        z = nn.functional.one_hot(self.element_index[numbers.long()].clamp(min=0), self.n_elements)
        f = self.node_in(z.to(positions.dtype)) + (self.node_msg(e) * graph.unsqueeze(-1)).sum(2)
        # 3. PointNet step: max over atoms within 10 Å (the atom itself included)
        near = pair & (r[..., 0] <= self.pointnet_radius)
        gauss = torch.exp(-((r - self.gauss_shift) ** 2) / (2 * self.gauss_var))
        fj = f[:, None, :, :].expand(-1, f.shape[1], -1, -1)
        fi = f[:, :, None, :].expand_as(fj)
        h = self.pn_out(
            nn.functional.silu(self.pn_norm(self.pn_in(torch.cat([fj, fi, gauss, u], -1)), near))
        )
        f = h.masked_fill(~near.unsqueeze(-1), float("-inf")).amax(2)
        f = torch.where(real.unsqueeze(-1), f, torch.zeros_like(f))
        # 4. graph LayerNorm over each molecule's atoms and channels, head, sum over atoms
        count = (real.sum(1, keepdim=True) * f.shape[-1]).clamp(min=1).to(f.dtype)  # (B, 1)
        mean = f.sum((1, 2)).unsqueeze(1) / count
        centred = (f - mean.unsqueeze(-1)) * real.unsqueeze(-1)
        var = (centred**2).sum((1, 2)).unsqueeze(1) / count
        f = centred / (var.unsqueeze(-1) + 1e-5).sqrt() * self.ln_weight + self.ln_bias
        return (self.head(f) * real.unsqueeze(-1)).sum(1)
