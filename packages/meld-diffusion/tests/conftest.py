from __future__ import annotations

import numpy as np
import pytest
import torch
from meld_diffusion.data import encode
from meld_diffusion.meld import GraphMDM
from meld_diffusion.model import GraphTransformer, GraphTransformerConfig
from meld_diffusion.rates import ClassRates, ElementRates, MELDConfig

from shared_core.data import load, mol_graph

# shared-core's plugin (fixture `device`, markers `cuda` and `slow`): `pytest tests` works on an
# installed wheel too, with or without `-p shared_core.pytest_plugin`
pytest_plugins = ["shared_core.pytest_plugin"]

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
def meld_model() -> GraphMDM:
    """A small MELD model (H with 8 columns, D = 5) with random weights everywhere."""
    net = GraphTransformer(
        GraphTransformerConfig(max_atoms=MAX_ATOMS, d_node=16, d_edge=8, n_layers=2, d_pos=5)
    )
    rates = ElementRates(MELDConfig(n_columns=8, dim=5))
    _randomise(net, 0)
    _randomise(rates, 1, std=0.8)
    return GraphMDM(net, rates)


@pytest.fixture
def class_model(denoiser: GraphTransformer) -> GraphMDM:
    """The class-level baseline with random rates."""
    rates = ClassRates()
    _randomise(rates, 2, std=0.8)
    return GraphMDM(denoiser, rates)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
