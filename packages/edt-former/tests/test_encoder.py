from __future__ import annotations

import numpy as np
import pytest
import torch
from edt_former.encoder import GIN, FrozenGIN, GINConfig, collate_graphs, pretrain_gin

from shared_core.data import mol_graph


def test_collate_offsets_and_node_order() -> None:
    gs = [mol_graph("CCO"), mol_graph("c1ccccc1N")]
    b = collate_graphs(gs)
    assert b.sizes == (3, 7) and b.atoms.shape == (10, 5)
    assert b.edge_index.min() >= 0 and b.edge_index.max() == 9
    assert b.graph.tolist() == [0] * 3 + [1] * 7
    # node k of a graph is RDKit atom k: atomic numbers in SMILES order
    assert b.atoms[:3, 0].tolist() == [6, 6, 8]
    with pytest.raises(ValueError, match="at least one"):
        collate_graphs([])


def test_node_features_do_not_depend_on_the_batch() -> None:
    torch.manual_seed(0)
    enc = FrozenGIN(GIN(GINConfig(dim=16, layers=2)))
    gs = [mol_graph(s) for s in ("CCO", "c1ccccc1N", "CC(=O)O")]
    together = enc.encode(gs)
    alone = [enc.encode([g])[0] for g in gs]
    for a, b in zip(together, alone, strict=True):
        assert a.shape[1] == 16
        assert torch.allclose(a, b, atol=1e-6)
    assert not any(p.requires_grad for p in enc.model.parameters())


def test_pretraining_fits_a_planted_target() -> None:
    smiles = ["C", "CC", "CCC", "CCCC", "CO", "CCO", "CCCO", "N", "CN", "CCN"] * 3
    gs = [mol_graph(s) for s in smiles]
    y = np.array([[g.num_atoms, float((g.atomic_numbers == 8).sum())] for g in gs])
    enc = pretrain_gin(
        gs,
        y,
        steps=150,
        batch_size=16,
        lr=5e-3,
        config=GINConfig(dim=16, layers=2, n_targets=2),
        cache=False,
    )
    pred = enc.model.predict(collate_graphs(gs)).detach().numpy()
    z = (y - y.mean(0)) / y.std(0)
    assert np.mean((pred - z) ** 2) < 0.1
    with pytest.raises(ValueError, match="one per graph"):
        pretrain_gin(gs, y[:3], steps=1, cache=False)
    with pytest.raises(ValueError, match="columns"):
        pretrain_gin(gs, y, steps=1, config=GINConfig(n_targets=3), cache=False)
