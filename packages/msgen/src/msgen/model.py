"""The EGNN eps-network on fully connected molecules (option ``network="egnn"``; 0.1.0's default).

Layer l (Satorras et al. 2021, EGNN, with coordinates held fixed inside the stack):

    m_ij = phi_e([h_i, h_j, e_ij])                      e_ij = [rbf(d_ij), bond_ij, guide_ij, t]
    h_i <- h_i + phi_h([h_i, sum_j m_ij])

and the output is EGNN's coordinate update, read as the noise estimate

    eps_i = sum_j (x_i - x_j) / (d_ij + 1) * phi_x(m_ij)   then minus its molecule mean,

so rotating (or reflecting) the input rotates eps, translating it leaves eps unchanged,
and permuting the atoms permutes it. Every feature that sees coordinates is a distance.

Edge features of a pair (i, j) in one molecule: the noisy distance through a Gaussian
radial basis; the bond type (none/single/double/triple/aromatic) and the topological
distance (1, 2, 3, >3 bonds: GeoDiff's ``edge_order = 3`` edges); and, in a guided
(stage >= 2) network, MSGEN's guide distance ``||g_i - g_j||`` through its OWN radial
basis and MLP encoder (public code ``ConditionalDualEncoderEpsNetwork.edge_condition_*``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from msgen.data import ELEMENTS, element_index
from shared_core.data import MolGraph

MAX_HOPS = 4  # topological distance classes 1, 2, 3 and ">3"


@dataclass(frozen=True)
class DenoiserConfig:
    """Size of the eps-network (defaults: the tiny scale)."""

    hidden: int = 64  # width of h and m
    layers: int = 4  # message-passing layers
    rbf: int = 16  # Gaussian radial basis functions on [0, rbf_max]
    rbf_max: float = 8.0  # Å; QM9 molecules are at most ~8 Å across
    guided: bool = False  # stage >= 2: guide distances enter as extra edge features

    def __post_init__(self) -> None:
        for name in ("hidden", "layers", "rbf"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if not self.rbf_max > 0:
            raise ValueError(f"rbf_max: expected a positive distance in Å, got {self.rbf_max!r}")


@dataclass
class GraphBatch:
    """Molecules packed into one graph of all intra-molecular ordered pairs.

    z ``(N,)`` element indices; batch ``(N,)`` molecule of each atom; pairs ``(2, P)``
    ordered pairs (i != j) in one molecule; bond ``(P,)`` bond-type code (0 = not bonded);
    hops ``(P,)`` topological distance class 0..MAX_HOPS-1; num_graphs G.
    """

    z: torch.Tensor
    batch: torch.Tensor
    pairs: torch.Tensor
    bond: torch.Tensor
    hops: torch.Tensor
    num_graphs: int

    @property
    def num_atoms(self) -> int:
        return int(self.z.shape[0])


@dataclass(frozen=True)
class PairTemplate:
    """The pair features of one molecular graph (numpy, built once and reused)."""

    z: np.ndarray
    pairs: np.ndarray
    bond: np.ndarray
    hops: np.ndarray


def pair_template(graph: MolGraph) -> PairTemplate:
    """All ordered pairs of `graph` with bond type and topological distance class."""
    n = graph.num_atoms
    bond = np.zeros((n, n), dtype=np.int64)
    ei = graph.edge_index
    bond[ei[0], ei[1]] = graph.bond_types
    # shortest-path lengths by repeated boolean matrix products (n <= a few dozen)
    adj = bond > 0
    dist = np.full((n, n), MAX_HOPS, dtype=np.int64)
    reach = np.eye(n, dtype=bool)
    for hop in range(1, MAX_HOPS):
        reach_next = reach | ((reach.astype(np.int64) @ adj.astype(np.int64)) > 0)
        dist[reach_next & ~reach] = hop
        reach = reach_next
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    return PairTemplate(
        element_index(graph.atomic_numbers), np.stack([i, j]), bond[i, j], dist[i, j] - 1
    )


def pack(templates: Sequence[PairTemplate]) -> GraphBatch:
    """One `GraphBatch` of several molecules (atom indices offset per molecule)."""
    if len(templates) == 0:
        raise ValueError("templates: expected at least one molecule")
    offsets = np.cumsum([0] + [t.z.size for t in templates])
    return GraphBatch(
        z=torch.from_numpy(np.concatenate([t.z for t in templates])),
        batch=torch.from_numpy(np.repeat(np.arange(len(templates)), [t.z.size for t in templates])),
        pairs=torch.from_numpy(
            np.concatenate([t.pairs + o for t, o in zip(templates, offsets, strict=False)], axis=1)
        ),
        bond=torch.from_numpy(np.concatenate([t.bond for t in templates])),
        hops=torch.from_numpy(np.concatenate([t.hops for t in templates])),
        num_graphs=len(templates),
    )


def rbf(d: torch.Tensor, count: int, d_max: float) -> torch.Tensor:
    """``(P,)`` distances -> ``(P, count)`` Gaussians centred on a grid over [0, d_max]."""
    mu = torch.linspace(0.0, d_max, count, dtype=d.dtype, device=d.device)
    width = d_max / count
    return torch.exp(-(((d[:, None] - mu) / width) ** 2))


def time_features(t: torch.Tensor, dim: int = 8) -> torch.Tensor:
    """``(G,)`` fractions t/T in [0, 1] -> ``(G, dim)`` sinusoids."""
    freqs = (
        torch.exp(torch.arange(dim // 2, dtype=t.dtype, device=t.device) * math.log(2.0)) * math.pi
    )
    ang = t[:, None] * freqs
    return torch.cat([torch.sin(ang), torch.cos(ang)], dim=-1)


def _mlp(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.SiLU(), nn.Linear(d_hidden, d_out))


class EGNNDenoiser(nn.Module):
    """eps-network ``(x_t, t, graph[, guide]) -> eps_hat`` (see the module docstring)."""

    def __init__(self, config: DenoiserConfig) -> None:
        super().__init__()
        if not isinstance(config, DenoiserConfig):
            raise TypeError(f"config: expected a DenoiserConfig, got {type(config).__name__}")
        self.config = config
        h = config.hidden
        self.embed = nn.Embedding(len(ELEMENTS), h)
        self.bond_embed = nn.Embedding(5, h)
        self.hop_embed = nn.Embedding(MAX_HOPS, h)
        self.dist_encoder = _mlp(config.rbf + 8, h, h)  # noisy distance + time
        self.guide_encoder = _mlp(config.rbf, h, h) if config.guided else None
        self.edge_layers = nn.ModuleList(_mlp(3 * h, h, h) for _ in range(config.layers))
        self.node_layers = nn.ModuleList(_mlp(2 * h, h, h) for _ in range(config.layers))
        self.coord_head = _mlp(h, h, 1)

    def edge_features(
        self, x: torch.Tensor, t: torch.Tensor, graph: GraphBatch, guide: torch.Tensor | None
    ) -> torch.Tensor:
        """``(P, hidden)`` invariant features of every pair."""
        cfg = self.config
        i, j = graph.pairs
        d = (x[i] - x[j]).norm(dim=-1)
        temb = time_features(t.to(x.dtype))[graph.batch[i]]
        e = self.dist_encoder(torch.cat([rbf(d, cfg.rbf, cfg.rbf_max), temb], dim=-1))
        e = e + self.bond_embed(graph.bond) + self.hop_embed(graph.hops)
        if self.guide_encoder is not None:
            if guide is None:
                raise ValueError("guide: this network is guided (stage >= 2); pass guide positions")
            dg = (guide[i] - guide[j]).norm(dim=-1)
            e = e + self.guide_encoder(rbf(dg, cfg.rbf, cfg.rbf_max))
        elif guide is not None:
            raise ValueError("guide: this network is not guided (stage 1); pass guide=None")
        return e

    def forward(
        self,
        x: torch.Tensor,
        t: torch.Tensor,
        graph: GraphBatch,
        guide: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """eps_hat ``(N, 3)`` for noisy positions x ``(N, 3)`` at time fractions t ``(G,)``.

        guide ``(N, 3)``: the upsampled coarser-scale conformer (guided networks only).
        """
        n = graph.num_atoms
        if x.shape != (n, 3):
            raise ValueError(f"x: expected shape ({n}, 3) for {n} atoms, got {tuple(x.shape)}")
        if t.shape != (graph.num_graphs,):
            raise ValueError(f"t: expected shape ({graph.num_graphs},), got {tuple(t.shape)}")
        if guide is not None and guide.shape != (n, 3):
            raise ValueError(f"guide: expected shape ({n}, 3), got {tuple(guide.shape)}")
        i, j = graph.pairs
        e = self.edge_features(x, t, graph, guide)
        h = self.embed(graph.z).to(x.dtype)
        m = e
        for edge_mlp, node_mlp in zip(self.edge_layers, self.node_layers, strict=True):
            m = edge_mlp(torch.cat([h[i], h[j], e], dim=-1))
            agg = torch.zeros_like(h).index_add_(0, i, m)
            h = h + node_mlp(torch.cat([h, agg], dim=-1))
        diff = x[i] - x[j]
        w = self.coord_head(m) / (diff.norm(dim=-1, keepdim=True) + 1.0)
        eps = torch.zeros_like(x).index_add_(0, i, diff * w)
        return eps - molecule_mean(eps, graph)


def molecule_mean(v: torch.Tensor, graph: GraphBatch) -> torch.Tensor:
    """``(N, 3)``: each atom's row replaced by its molecule's mean row."""
    sums = torch.zeros(graph.num_graphs, v.shape[1], dtype=v.dtype, device=v.device)
    sums.index_add_(0, graph.batch, v)
    counts = torch.bincount(graph.batch, minlength=graph.num_graphs).to(v.dtype)
    return (sums / counts[:, None])[graph.batch]


def num_parameters(module: nn.Module) -> int:
    """Trainable parameters."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def graph_batch_to(graph: GraphBatch, device: torch.device | str) -> GraphBatch:
    """`graph` with every tensor on `device`."""
    return GraphBatch(
        graph.z.to(device), graph.batch.to(device), graph.pairs.to(device),
        graph.bond.to(device), graph.hops.to(device), graph.num_graphs,
    )  # fmt: skip


def as_float_tensor(a: np.ndarray | torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A numpy array or tensor as a tensor of `dtype`."""
    return torch.as_tensor(np.asarray(a) if not isinstance(a, torch.Tensor) else a).to(dtype)
