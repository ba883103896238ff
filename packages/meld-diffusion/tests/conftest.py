from __future__ import annotations

import numpy as np
import pytest
import torch
from meld_diffusion.data import encode
from meld_diffusion.model import GraphTransformer, GraphTransformerConfig, ScheduleNetwork

from shared_core.data import load, mol_graph

MAX_ATOMS = 6


@pytest.fixture(scope="session")
def qm9_rows() -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """The first QM9 molecules with at most 6 heavy atoms, as rows of the 6-atom layout."""
    smiles, _ = load("qm9-smiles", limit=400)
    graphs, kept = [], []
    for s in smiles:
        g = mol_graph(s, kekulize=True)
        if g.num_atoms <= MAX_ATOMS and not (g.atoms[:, 1] != 0).any():
            graphs.append(g)
            kept.append(s)
    rows, counts = encode(graphs, MAX_ATOMS)
    return torch.as_tensor(rows), torch.as_tensor(counts), kept


def _randomise(module: torch.nn.Module, seed: int, std: float = 0.3) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * std)


@pytest.fixture
def denoiser() -> GraphTransformer:
    """A small denoiser with random (non-zero) weights everywhere, heads included."""
    net = GraphTransformer(
        GraphTransformerConfig(max_atoms=MAX_ATOMS, d_node=16, d_edge=8, n_layers=2)
    )
    _randomise(net, 0)
    return net


@pytest.fixture
def rates() -> ScheduleNetwork:
    """A small schedule network with random weights (rates far from 1)."""
    net = ScheduleNetwork(
        GraphTransformerConfig(
            max_atoms=MAX_ATOMS, d_node=8, d_edge=8, n_layers=1, n_heads=2, out_dim=1,
            time_conditioning=False,
        )
    )  # fmt: skip
    _randomise(net, 1, std=0.5)
    return net


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
