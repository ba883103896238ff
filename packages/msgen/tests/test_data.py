"""QM9 conformers (real B3LYP geometries through shared_core.data), molecules from SMILES."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from msgen.data import element_index, molecule, qm9_conformers

HAVE_QM9 = importlib.util.find_spec("qm9pack") is not None


@pytest.mark.skipif(not HAVE_QM9, reason="needs the 'data' extra (qm9pack)")
def test_qm9_conformers_are_disjoint_real_geometries() -> None:
    train, test = qm9_conformers(20, 5, pool=300, seed=0)
    assert len(train) == 20 and len(test) == 5
    keys = {g.positions.tobytes() for g in train}  # type: ignore[union-attr]
    assert not keys & {g.positions.tobytes() for g in test}  # type: ignore[union-attr]
    for g in train + test:
        assert g.positions is not None and (g.atomic_numbers > 1).sum() >= 3
        d = np.linalg.norm(g.positions[g.edge_index[0]] - g.positions[g.edge_index[1]], axis=-1)
        assert d.min() > 0.9 and d.max() < 1.7  # DFT bond lengths, in Å
    again, _ = qm9_conformers(20, 5, pool=300, seed=0)
    assert all(np.array_equal(a.positions, b.positions) for a, b in zip(train, again, strict=True))  # type: ignore[arg-type]


def test_bad_input_raises() -> None:
    with pytest.raises(ValueError, match="n_train"):
        qm9_conformers(0, 5)
    with pytest.raises(ValueError, match="invalid SMILES"):
        molecule("C1CC")
    with pytest.raises(ValueError, match="atomic numbers"):
        element_index(np.array([6, 92]))


def test_molecule_from_smiles_has_explicit_hydrogens() -> None:
    g = molecule("CCO")
    assert g.num_atoms == 9 and g.positions is None
    assert (g.atomic_numbers == 1).sum() == 6


HAVE_PYG = importlib.util.find_spec("torch_geometric") is not None


def _geodiff_file(path, molecules):
    """Write conformers as GeoDiff's ``rdmol_to_data`` does: one Data per conformer."""
    import pickle

    import torch
    from rdkit import Chem
    from rdkit.Chem import AllChem
    from torch_geometric.data import Data

    data, truth = [], {}
    for idx, (smiles, n_conf) in enumerate(molecules):
        mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
        ids = list(AllChem.EmbedMultipleConfs(mol, numConfs=n_conf, randomSeed=idx))
        truth[smiles] = np.stack([mol.GetConformer(i).GetPositions() for i in ids])
        for i in ids:
            single = Chem.Mol(mol, confId=i)
            data.append(
                Data(
                    atom_type=torch.tensor([a.GetAtomicNum() for a in mol.GetAtoms()]),
                    pos=torch.tensor(mol.GetConformer(i).GetPositions(), dtype=torch.float32),
                    rdmol=single, smiles=smiles, idx=torch.tensor([idx]),
                )
            )  # fmt: skip
    with open(path, "wb") as f:
        pickle.dump(data, f)
    return truth


@pytest.mark.skipif(not HAVE_PYG, reason="needs the 'geom' extra (torch_geometric)")
def test_read_geodiff_pickle_groups_conformers_by_molecule(tmp_path) -> None:
    from msgen.data import read_geodiff_pickle
    from msgen.evaluation import evaluate

    truth = _geodiff_file(tmp_path / "test_data.pkl", [("CCO", 3), ("c1ccccc1C", 2)])
    sets = read_geodiff_pickle(tmp_path / "test_data.pkl")
    assert [s.smiles for s in sets] == ["CCO", "c1ccccc1C"]
    for s in sets:
        np.testing.assert_allclose(s.conformers, truth[s.smiles], atol=1e-5)  # float32 in the file
        assert s.graph.num_atoms == s.conformers.shape[1]
    # the references themselves, 2x as many generated: COV 1, MAT 0
    gens = [np.concatenate([s.conformers, s.conformers]) for s in sets]
    out = evaluate([s.graph for s in sets], gens, conformers=[s.conformers for s in sets])
    assert out["COV-R@0.5"] == 1.0 and out["MAT-R"] < 1e-3
    assert [r.shape for r in out["rmsd"]] == [(3, 6), (2, 4)]


def test_read_geodiff_pickle_bad_input(tmp_path) -> None:
    import pickle

    from msgen.data import read_geodiff_pickle

    if not HAVE_PYG:
        pytest.skip("needs the 'geom' extra (torch_geometric)")
    with pytest.raises(FileNotFoundError, match="path"):
        read_geodiff_pickle(tmp_path / "missing.pkl")
    (tmp_path / "bad.pkl").write_bytes(pickle.dumps({"not": "a list"}))
    with pytest.raises(ValueError, match="list"):
        read_geodiff_pickle(tmp_path / "bad.pkl")


@pytest.mark.skipif(not HAVE_PYG, reason="needs the 'geom' extra (torch_geometric)")
def test_experiment_runs_on_geodiff_files_with_three_stages(tmp_path) -> None:
    from msgen.epsnet import EpsNetConfig
    from msgen.experiments.conformers import ConformerConfig, run

    _geodiff_file(tmp_path / "train.pkl", [("Cc1ccccc1", 2), ("OC1CCC1", 2), ("c1ccncc1C", 1)])
    _geodiff_file(tmp_path / "test.pkl", [("CCc1ccccc1", 2), ("NC1CC1", 1)])
    cfg = ConformerConfig(
        n_train=4, n_test=2, epsnet=EpsNetConfig(hidden=8, num_convs=1, num_convs_local=1),
        ld_steps=5, diffusion_steps=3, batch_size=2, stage1_steps=1, stage2_steps=1, guide_taus=(3.0,),
        scales=("scaffold", "heavy"), geom_train=str(tmp_path / "train.pkl"),
        geom_test=str(tmp_path / "test.pkl"), etkdg=False,
    )  # fmt: skip
    out = run(cfg)
    assert out["n_train"] == 4 and out["n_test"] == 2
    assert {"MSGEN", "single-scale", "oracle scaffold + stages 2-3"} <= set(out["metrics"])
    assert len(out["losses"]) == 4  # three MSGEN stages and the single-scale network
