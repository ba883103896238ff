"""The over-fit diagnostic's guide probe (`msgen.experiments.overfit`): exact on a planted
score, and it tells a network that reads its guide from one that does not."""

from __future__ import annotations

import dataclasses
import types

import pytest
import torch
from msgen.epsnet import EpsNetConfig, local_mask
from msgen.experiments.overfit import guide_probe, oracle_guides
from msgen.model import GraphBatch
from rdkit import Chem
from rdkit.Chem import AllChem

from shared_core.data import MolGraph, mol_graph


def _conformers(smiles: str, k: int) -> list[MolGraph]:
    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    ids = AllChem.EmbedMultipleConfs(mol, numConfs=k, randomSeed=7)
    base = mol_graph(mol)
    return [
        MolGraph(base.atoms, base.edge_index, base.bond_types, mol.GetConformer(c).GetPositions())
        for c in ids
    ]


class _Planted(torch.nn.Module):
    """The exact clean-guide score on every edge: ``s = (g - d) / sigma`` (plus a d term)."""

    config = types.SimpleNamespace(cutoff=10.0)

    def edge_scores(
        self, d: torch.Tensor, dg: torch.Tensor, graph: GraphBatch, sigma: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        s = (dg - d) / sigma[graph.pairs[0]]
        loc = local_mask(graph)
        return torch.where(loc, 0.0, s), torch.where(loc, s, 0.0)


@pytest.mark.parametrize("sigma", [0.05, 1.0])
def test_guide_probe_of_the_exact_score_is_one_and_minus_one(sigma: float) -> None:
    """Both directions of a pair move together; a probe that took one would give 0.5."""
    g = _conformers("CCCO", 1)[0]
    guide = oracle_guides([g], 1, 3.0, 0)[0][0]
    out = guide_probe(_Planted(), g, guide, sigma, seed=0)  # type: ignore[arg-type]
    assert out["dS/dg"] == pytest.approx(1.0, abs=1e-4)
    assert out["dS/dd"] == pytest.approx(-1.0, abs=1e-4)


def test_probe_config_is_the_default_network() -> None:
    assert dataclasses.replace(EpsNetConfig(), guided=True).guide_input == "length"
