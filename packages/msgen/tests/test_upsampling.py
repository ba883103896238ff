"""Molecular upsampling: coarse atoms bit-exact, every new atom exactly tau from its anchor,
breadth-first order, agreement with the public algorithm transcribed (`reference`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from msgen.data import heavy_atoms
from msgen.reference import upsample_reference
from msgen.upsampling import upsample, upsampling_plan
from rdkit import Chem

from shared_core.data import mol_graph
from shared_core.testing import assert_close


def _graph(smiles: str):
    return mol_graph(Chem.AddHs(Chem.MolFromSmiles(smiles)))


SMILES = ["CCO", "c1ccccc1O", "CC(C)(C)C#N", "OC1CC1N", "O=C1NC(=O)C=C1"]


@pytest.mark.parametrize("smiles", SMILES)
@pytest.mark.parametrize("tau", [0.0, 1.1, 3.0])
def test_coarse_exact_and_new_atoms_at_tau(smiles: str, tau: float) -> None:
    g = _graph(smiles)
    coarse = heavy_atoms(g)
    plan = upsampling_plan(g.edge_index, coarse, g.num_atoms)
    k = 4
    pos = torch.randn(
        k, coarse.size, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
    )
    fine = upsample(plan, pos, tau, torch.Generator().manual_seed(2))
    assert torch.equal(fine[:, torch.as_tensor(coarse)], pos)  # bit-exact
    for r, (i, nbrs) in enumerate(zip(plan.order.tolist(), plan.anchors, strict=True)):
        anchor = fine[:, list(nbrs)].mean(1) if nbrs else pos.mean(1)
        dist = (fine[:, i] - anchor).norm(dim=-1)
        np.testing.assert_allclose(dist.numpy(), tau, atol=1e-12, err_msg=f"atom {i} (rank {r})")
    assert sorted(plan.order.tolist() + coarse.tolist()) == list(range(g.num_atoms))


@pytest.mark.parametrize("smiles", SMILES)
def test_breadth_first_every_non_fallback_atom_has_a_placed_neighbour(smiles: str) -> None:
    g = _graph(smiles)
    coarse = heavy_atoms(g)
    plan = upsampling_plan(g.edge_index, coarse, g.num_atoms)
    bonded = {(i, j) for i, j in g.edge_index.T.tolist()}
    placed = set(coarse.tolist())
    assert not plan.fallback.any()  # a connected molecule needs no fallback
    for i, nbrs in zip(plan.order.tolist(), plan.anchors, strict=True):
        assert nbrs and all((i, j) in bonded and j in placed for j in nbrs)
        placed.add(i)


def test_first_the_atoms_bonded_to_the_coarse_part_then_bfs() -> None:
    # chain 0-1-2-3-4 with coarse {0}: order must be 1, 2, 3, 4 (each one bond further)
    ei = np.array([[0, 1, 1, 2, 2, 3, 3, 4], [1, 0, 2, 1, 3, 2, 4, 3]])
    plan = upsampling_plan(ei, np.array([0]), 5)
    assert plan.order.tolist() == [1, 2, 3, 4]
    assert plan.anchors == ((0,), (1,), (2,), (3,))


def test_disconnected_atom_falls_back_to_the_coarse_centroid() -> None:
    ei = np.array([[0, 1, 1, 2], [1, 0, 2, 1]])  # atoms 0-1-2 bonded, atom 3 isolated
    plan = upsampling_plan(ei, np.array([0, 1]), 4)
    assert plan.order.tolist() == [2, 3] and plan.fallback.tolist() == [False, True]
    pos = torch.tensor([[[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]]], dtype=torch.float64)
    fine = upsample(plan, pos, 3.0, torch.Generator().manual_seed(0))
    assert (
        abs(float((fine[0, 3] - torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)).norm()) - 3.0)
        < 1e-12
    )


@pytest.mark.parametrize("smiles", SMILES)
def test_matches_the_public_algorithm(smiles: str) -> None:
    g = _graph(smiles)
    coarse = heavy_atoms(g)
    plan = upsampling_plan(g.edge_index, coarse, g.num_atoms)
    gen = torch.Generator().manual_seed(3)
    pos = torch.randn(3, coarse.size, 3, dtype=torch.float64, generator=gen)
    u = torch.randn(3, plan.order.size, 3, dtype=torch.float64, generator=gen)
    u = u / u.norm(dim=-1, keepdim=True)
    fast = upsample(plan, pos, 3.0, directions=u)
    for s in range(3):
        ref = upsample_reference(
            g.edge_index, coarse.tolist(), pos[s].numpy(), g.num_atoms, 3.0, u[s].numpy()
        )
        assert_close(f"upsampling conformer {s}", ref, fast[s].numpy(), ratio=1e-14)


def test_seeded_upsampling_is_deterministic() -> None:
    g = _graph("CCO")
    plan = upsampling_plan(g.edge_index, heavy_atoms(g), g.num_atoms)
    pos = torch.zeros(2, 3, 3, dtype=torch.float64)
    a = upsample(plan, pos, 3.0, torch.Generator().manual_seed(5))
    b = upsample(plan, pos, 3.0, torch.Generator().manual_seed(5))
    c = upsample(plan, pos, 3.0, torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_bad_input_raises() -> None:
    g = _graph("CCO")
    coarse = heavy_atoms(g)
    plan = upsampling_plan(g.edge_index, coarse, g.num_atoms)
    with pytest.raises(ValueError, match="coarse_pos"):
        upsample(plan, torch.zeros(1, coarse.size + 1, 3))  # mismatched atom count
    with pytest.raises(ValueError, match="coarse_pos"):
        upsample(plan, torch.zeros(coarse.size, 3))
    with pytest.raises(ValueError, match="tau"):
        upsample(plan, torch.zeros(1, coarse.size, 3), tau=-1.0)
    with pytest.raises(ValueError, match="directions"):
        upsample(plan, torch.zeros(1, coarse.size, 3), directions=torch.zeros(1, 1, 3))
    with pytest.raises(ValueError, match="coarse"):
        upsampling_plan(g.edge_index, np.array([0, 0]), g.num_atoms)
    with pytest.raises(ValueError, match="atom indices"):
        upsampling_plan(g.edge_index, np.array([99]), g.num_atoms)
    with pytest.raises(ValueError, match="edge_index"):
        upsampling_plan(np.zeros((3, 2), dtype=int), coarse, g.num_atoms)


@pytest.mark.parametrize("smiles", SMILES)
def test_centroid_anchor_is_the_public_code_as_it_runs(smiles: str) -> None:
    """The public callers pass tensor index lists, so every new atom lands tau from the
    coarse centroid; coarse atoms stay bit-exact."""
    g = _graph(smiles)
    coarse = heavy_atoms(g)
    plan = upsampling_plan(g.edge_index, coarse, g.num_atoms)
    pos = torch.randn(3, coarse.size, 3, dtype=torch.float64)
    fine = upsample(plan, pos, 2.5, torch.Generator().manual_seed(0), anchor="centroid")
    assert torch.equal(fine[:, torch.as_tensor(coarse)], pos)
    d = (fine[:, torch.as_tensor(plan.order)] - pos.mean(1, keepdim=True)).norm(dim=-1)
    np.testing.assert_allclose(d.numpy(), 2.5, atol=1e-12)
