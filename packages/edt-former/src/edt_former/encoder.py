"""The frozen molecular graph encoder: a small GIN pre-trained here on QM9 targets.

The paper's encoders (Uni-Mol, MoleculeSTM) have no offline weights, so a GINE-style network
(Hu et al. 2020: ``h_i' = MLP((1 + eps) h_i + sum_j ReLU(h_j + E(bond_ij)))``, eps = 0) is
pre-trained to regress standardised QM9 properties, cached, then frozen. It is written in
plain torch (one ``index_add_``) rather than torch_geometric, whose import alone costs ~8 s.

Anything that maps a molecule to ``(atoms, dim)`` node features in RDKit atom order can
replace it: `NodeEncoder` is the whole interface (e.g. precomputed Uni-Mol features).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from shared_core.data import MolGraph

PRETRAIN_TARGETS = ("mu", "alpha", "homo", "lumo", "gap", "r2", "zpve", "Cv")
"""QM9 targets the GIN regresses (standardised); intensive and well-behaved ones."""


class NodeEncoder(Protocol):
    """Node features of a list of molecules: ``encode(graphs) -> [(atoms_i, dim)]``, RDKit order."""

    dim: int

    def encode(self, graphs: list[MolGraph]) -> list[torch.Tensor]: ...


@dataclass(frozen=True)
class GraphBatch:
    """Graphs concatenated: ``atoms (N, 5)``, ``edge_index (2, E)``, ``bonds (E,)``, ``graph (N,)``."""

    atoms: torch.Tensor
    edge_index: torch.Tensor
    bonds: torch.Tensor
    graph: torch.Tensor
    sizes: tuple[int, ...]


def collate_graphs(graphs: list[MolGraph]) -> GraphBatch:
    """One disjoint union of `graphs` (node ids offset per graph)."""
    if not graphs:
        raise ValueError("graphs: expected at least one molecular graph")
    sizes = tuple(g.num_atoms for g in graphs)
    offsets = np.cumsum((0, *sizes[:-1]))
    atoms = torch.as_tensor(np.concatenate([g.atoms for g in graphs]), dtype=torch.long)
    edges = torch.as_tensor(
        np.concatenate([g.edge_index + o for g, o in zip(graphs, offsets, strict=True)], axis=1),
        dtype=torch.long,
    )
    bonds = torch.as_tensor(np.concatenate([g.bond_types for g in graphs]), dtype=torch.long)
    graph = torch.repeat_interleave(torch.arange(len(graphs)), torch.tensor(sizes))
    return GraphBatch(atoms, edges.reshape(2, -1), bonds, graph, sizes)


@dataclass(frozen=True)
class GINConfig:
    """Encoder size (small: the whole pre-training is seconds on a CPU)."""

    dim: int = 64
    layers: int = 3
    n_targets: int = len(PRETRAIN_TARGETS)


class GIN(nn.Module):
    """GINE over RDKit molecular graphs; `forward` gives node features ``(N, dim)``."""

    def __init__(self, config: GINConfig | None = None) -> None:
        super().__init__()
        c = config or GINConfig()
        self.config = c
        self.dim = c.dim
        # atomic number, formal charge (+4 offset), aromatic, hybridisation, number of Hs
        self.embed = nn.ModuleList(nn.Embedding(n, c.dim) for n in (120, 9, 2, 9, 9))
        self.bond = nn.ModuleList(nn.Embedding(5, c.dim) for _ in range(c.layers))
        self.mlp = nn.ModuleList(
            nn.Sequential(nn.Linear(c.dim, 2 * c.dim), nn.ReLU(), nn.Linear(2 * c.dim, c.dim))
            for _ in range(c.layers)
        )
        self.norm = nn.ModuleList(nn.LayerNorm(c.dim) for _ in range(c.layers))
        self.head = nn.Linear(c.dim, c.n_targets)

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        a = batch.atoms.clone()
        a[:, 1] = (a[:, 1] + 4).clamp(0, 8)
        a[:, 4] = a[:, 4].clamp(0, 8)
        h = sum(e(a[:, i]) for i, e in enumerate(self.embed))
        assert isinstance(h, torch.Tensor)
        src, dst = batch.edge_index
        for bond, mlp, norm in zip(self.bond, self.mlp, self.norm, strict=True):
            msg = torch.relu(h[src] + bond(batch.bonds))
            agg = torch.zeros_like(h).index_add_(0, dst, msg)
            h = h + norm(mlp(h + agg))  # residual keeps node identity through the layers
        return h

    def predict(self, batch: GraphBatch) -> torch.Tensor:
        """Graph-level property predictions ``(graphs, n_targets)`` (mean readout)."""
        h = self.forward(batch)
        n = len(batch.sizes)
        pooled = torch.zeros((n, h.shape[1]), dtype=h.dtype).index_add_(0, batch.graph, h)
        pooled = pooled / torch.tensor(batch.sizes, dtype=h.dtype)[:, None]
        return self.head(pooled)


class FrozenGIN:
    """A trained `GIN` as a frozen `NodeEncoder`."""

    def __init__(self, model: GIN) -> None:
        self.model = model.eval()
        for p in model.parameters():
            p.requires_grad_(False)
        self.dim = model.dim

    @torch.no_grad()
    def encode(self, graphs: list[MolGraph], batch_size: int = 512) -> list[torch.Tensor]:
        out: list[torch.Tensor] = []
        for s in range(0, len(graphs), batch_size):
            batch = collate_graphs(graphs[s : s + batch_size])
            h = self.model(batch)
            out += list(torch.split(h, list(batch.sizes)))
        return out


def pretrain_gin(
    graphs: list[MolGraph],
    targets: np.ndarray,
    *,
    steps: int,
    batch_size: int = 128,
    lr: float = 2e-3,
    seed: int = 0,
    config: GINConfig | None = None,
    cache: bool = True,
) -> FrozenGIN:
    """Regress standardised `targets` ``(molecules, n_targets)`` with `fit`, then freeze.

    With `cache`, the weights are stored under ``<shared-core cache>/edt-former/`` keyed by the
    data, the config and the seed, and reused.
    """
    from shared_core.atomic import atomic_write
    from shared_core.data import cache_dir
    from shared_core.device import seed_everything
    from shared_core.train import TrainConfig, fit, step_generator

    if len(graphs) != len(targets):
        raise ValueError(
            f"targets: expected {len(graphs)} rows (one per graph), got {len(targets)}"
        )
    c = config or GINConfig(n_targets=targets.shape[1])
    if c.n_targets != targets.shape[1]:
        raise ValueError(f"targets: expected {c.n_targets} columns, got {targets.shape[1]}")
    y = torch.as_tensor((targets - targets.mean(0)) / (targets.std(0) + 1e-8), dtype=torch.float32)
    key = hashlib.sha256(
        json.dumps([asdict(c), steps, batch_size, lr, seed, len(graphs)]).encode()
        + np.ascontiguousarray(targets, dtype=np.float64).tobytes()
    ).hexdigest()[:16]
    path = cache_dir("edt-former") / f"gin-{key}.pt"
    seed_everything(seed)
    model = GIN(c)
    if cache and path.is_file():
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        return FrozenGIN(model)

    def batch_fn(step: int) -> tuple[GraphBatch, torch.Tensor]:
        idx = torch.randint(len(graphs), (batch_size,), generator=step_generator(seed, step))
        return collate_graphs([graphs[i] for i in idx.tolist()]), y[idx]

    def loss_fn(m: GIN, batch: tuple[GraphBatch, torch.Tensor]) -> torch.Tensor:
        g, target = batch
        return nn.functional.mse_loss(m.predict(g), target)

    cfg = TrainConfig(steps=steps, lr=lr, warmup=max(1, steps // 20), weight_decay=0.0)
    fit(model, loss_fn, batch_fn, cfg, desc="GIN pretrain", show_progress=False, device="cpu")
    if cache:
        state: dict[str, Any] = model.state_dict()
        atomic_write(path, lambda f: torch.save(state, f))
    return FrozenGIN(model)
