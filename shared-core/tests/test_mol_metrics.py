import importlib.util

import numpy as np
import pytest

from shared_core import mol_metrics as mm
from shared_core.data import HYBRIDISATIONS, MolGraph, load, mol_graph

Chem = pytest.importorskip("rdkit.Chem", reason="RDKit not installed (extra 'chem')")
from rdkit.Chem import rdDistGeom, rdMolAlign  # noqa: E402


def pentavalent_carbon() -> MolGraph:
    atoms = [[6, 0, 0, HYBRIDISATIONS.index("SP3"), 0]] + [[6, 0, 0, 4, 3]] * 5
    edges = np.array([[0, k, k, 0] for k in range(1, 6)]).reshape(-1, 2).T
    return MolGraph(np.array(atoms), edges, np.ones(10))


def test_validity_marks_impossible_valence_invalid():
    assert mm.validity([pentavalent_carbon()]) == 0.0
    assert mm.validity([mol_graph("CC(C)(C)C")]) == 1.0
    assert mm.validity(["CCO", "C(C)(C)(C)(C)C", "not a smiles", mol_graph("c1ccccc1")]) == 0.5


def test_validity_does_not_add_missing_hydrogens():
    # pyrrole's N without its H cannot be kekulised; a correcting loader would add the H
    g = mol_graph("c1cc[nH]c1")
    atoms = g.atoms.copy()
    atoms[atoms[:, 0] == 7, 4] = 0
    assert mm.validity([MolGraph(atoms, g.edge_index, g.bond_types)]) == 0.0


@pytest.mark.skipif(importlib.util.find_spec("moses") is None, reason="molsets not installed")
def test_validity_uniqueness_novelty_match_direct_rdkit_loops():
    zinc = load("zinc-smiles", split="train", limit=300)
    rng = np.random.default_rng(0)
    broken = [s[: len(s) // 2] for s in zinc[:100]]  # mostly unclosed rings/branches
    generated = [*zinc[:150], *zinc[:50], *broken]
    generated = [generated[i] for i in rng.permutation(len(generated))]
    mols = [Chem.MolFromSmiles(s) for s in generated]
    valid = [Chem.MolToSmiles(m) for m in mols if m is not None]
    training = zinc[100:300]
    train = {Chem.MolToSmiles(Chem.MolFromSmiles(s)) for s in training}
    assert mm.validity(generated) == pytest.approx(len(valid) / len(generated))
    assert mm.uniqueness(generated) == pytest.approx(len(set(valid)) / len(valid))
    assert mm.novelty(generated, training) == pytest.approx(
        len(set(valid) - train) / len(set(valid))
    )
    assert (
        0 < mm.validity(generated) < 1
        and mm.uniqueness(generated) < 1
        and mm.novelty(generated, training) < 1
    )


def test_uniqueness_and_novelty_known_cases():
    assert mm.uniqueness(["CCO", "OCC", "C"]) == pytest.approx(2 / 3)  # OCC is ethanol again
    assert mm.uniqueness(["CCO", "xx"]) == 1.0  # invalid entries are not counted
    assert mm.novelty(["CCO", "C", "N"], ["OCC"]) == pytest.approx(2 / 3)
    assert mm.novelty(["CCO"], ["CCO"]) == 0.0
    assert mm.canonical_smiles(["OCC", "xx"]) == ["CCO", None]


def conformers(smiles: str, n: int, seed: int = 42) -> list:
    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    params = rdDistGeom.ETKDGv3()
    params.randomSeed = seed
    ids = list(rdDistGeom.EmbedMultipleConfs(mol, n, params))
    out = []
    for i in ids:
        one = Chem.Mol(mol)
        one.RemoveAllConformers()
        one.AddConformer(Chem.Conformer(mol.GetConformer(i)), assignId=True)
        out.append(one)
    return out


def test_identical_sets_cover_everything_at_zero_distance():
    confs = conformers("CCCCCCO", 5)
    rmsd = mm.conformer_rmsd(confs, confs)
    np.testing.assert_allclose(np.diag(rmsd), 0.0, atol=1e-6)
    scores = mm.coverage_matching(rmsd, threshold=0.5)
    assert scores["COV-R"] == scores["COV-P"] == 1.0
    assert scores["MAT-R"] == pytest.approx(0.0, abs=1e-6) and scores["MAT-P"] == pytest.approx(
        0.0, abs=1e-6
    )


def test_rmsd_matches_direct_rdkit_loop_and_ignores_rigid_motion():
    confs = conformers("CCCCCCO", 7)
    ref, gen = confs[:3], confs[3:]
    expected = np.array(
        [[rdMolAlign.GetBestRMS(Chem.RemoveHs(g), Chem.RemoveHs(r)) for g in gen] for r in ref]
    )
    rmsd = mm.conformer_rmsd(ref, gen)
    np.testing.assert_allclose(rmsd, expected, atol=1e-8)
    assert rmsd.min() > 0.01  # seven distinct conformers
    moved = Chem.Mol(gen[0])
    conf = moved.GetConformer()
    rot = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    for k, p in enumerate(conf.GetPositions() @ rot.T + [3.0, -2.0, 7.0]):
        conf.SetAtomPosition(k, p.tolist())
    assert mm.conformer_rmsd([gen[0]], [moved])[0, 0] == pytest.approx(0.0, abs=1e-6)
    assert mm.conformer_rmsd([mol_graph(gen[0])], [gen[0]])[0, 0] == pytest.approx(0.0, abs=1e-6)


def test_coverage_matching_known_matrix():
    rmsd = np.array([[0.1, 0.9], [0.7, 0.6], [1.0, 0.2]])  # 3 reference x 2 generated
    scores = mm.coverage_matching(rmsd, threshold=0.5)
    assert scores["COV-R"] == pytest.approx(2 / 3) and scores["MAT-R"] == pytest.approx(0.3)
    assert scores["COV-P"] == 1.0 and scores["MAT-P"] == pytest.approx(0.15)
    assert mm.coverage_matching(rmsd, threshold=0.6)["COV-R"] == 1.0  # <= threshold counts


def test_bad_input():
    with pytest.raises(ValueError, match="mols: expected a non-empty sequence"):
        mm.validity([])
    with pytest.raises(ValueError, match="mols: expected a non-empty sequence"):
        mm.validity("CCO")
    with pytest.raises(TypeError, match="mols: entry 1 is a int"):
        mm.validity(["C", 3])
    with pytest.raises(ValueError, match="mols: none of the 1 molecules is valid"):
        mm.uniqueness(["xx"])
    # issue 46: an invalid training SMILES used to raise; it cannot match any valid molecule
    assert mm.novelty(["C", "N"], ["C", "xx"]) == pytest.approx(0.5)
    with pytest.raises(TypeError, match="training: entry 1 is a int"):
        mm.novelty(["C"], ["C", 3])
    with pytest.raises(
        ValueError, match="reference: entry 0 is not a valid molecule with a conformer"
    ):
        mm.conformer_rmsd(["CCO"], conformers("CCO", 1))
    with pytest.raises(
        ValueError, match="generated: entry 0 is not the molecule of reference entry 0"
    ):
        mm.conformer_rmsd(conformers("CCO", 1), conformers("CCCl", 1))
    with pytest.raises(ValueError, match="rmsd: expected"):
        mm.coverage_matching(np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match="threshold: expected a positive"):
        mm.coverage_matching(np.ones((2, 2)), threshold=0)
