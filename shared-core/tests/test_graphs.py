import importlib.util
import sys

import numpy as np
import pytest

from shared_core.data import (
    ATOM_FEATURES,
    BOND_TYPES,
    FEATURISATION_VERSION,
    HYBRIDISATIONS,
    MolGraph,
    graph_to_mol,
    load,
    mol_graph,
)

Chem = pytest.importorskip("rdkit.Chem", reason="RDKit not installed (extra 'chem')")

needs_qm9 = pytest.mark.skipif(
    importlib.util.find_spec("qm9pack") is None,
    reason="qm9pack wheel not installed (extra 'moldata')",
)
needs_molsets = pytest.mark.skipif(
    importlib.util.find_spec("moses") is None,
    reason="molsets wheel not installed (extra 'moldata')",
)


def round_trip(smiles: str, kekulize: bool = False) -> str:
    mol = graph_to_mol(mol_graph(smiles, kekulize=kekulize))
    Chem.SanitizeMol(mol)
    return Chem.MolToSmiles(mol)


def canonical(smiles: str) -> str:
    return Chem.MolToSmiles(Chem.MolFromSmiles(smiles))


def assert_round_trips(smiles: list[str]) -> None:
    failed = [s for s in smiles if round_trip(s) != canonical(s)]
    assert not failed, f"{len(failed)} of {len(smiles)} failed, e.g. {failed[:5]}"
    kekule = [s for s in smiles[:200] if round_trip(s, kekulize=True) != canonical(s)]
    assert not kekule, f"kekulize=True: {len(kekule)} of 200 failed, e.g. {kekule[:5]}"


@needs_qm9
def test_round_trip_1000_qm9():
    smiles, _ = load("qm9-smiles", limit=1000)
    assert_round_trips(smiles)


@needs_molsets
def test_round_trip_1000_zinc():
    assert_round_trips(load("zinc-smiles", split="train", limit=1000))


# What the version-1 featurisation does not store, so these cannot round-trip.
NOT_ROUND_TRIPPING = {
    "C[C@H](N)O": ("CC(N)O", "tetrahedral stereo is not featurised"),
    "C/C=C/C": ("CC=CC", "double-bond stereo is not featurised"),
    "[13CH4]": ("C", "isotopes are not featurised"),
    "[CH3:1]O": ("CO", "atom-map numbers are not featurised"),
}


@pytest.mark.parametrize("smiles", sorted(NOT_ROUND_TRIPPING))
def test_named_cases_that_cannot_round_trip(smiles):
    expected, _why = NOT_ROUND_TRIPPING[smiles]
    assert canonical(smiles) != expected
    assert round_trip(smiles) == expected


def test_dative_bond_is_refused():
    with pytest.raises(ValueError, match="DATIVE"):
        mol_graph("[NH3]->[Pt]")


@pytest.mark.parametrize(
    "smiles",
    ["[CH2]C", "c1cc[nH]c1", "[NH4+].[Cl-]", "[O-][n+]1ccccc1", "OB(O)c1ccccc1", "[Cu+2]", "C#N"],
)
def test_charges_radicals_and_fragments_round_trip(smiles):
    assert round_trip(smiles) == canonical(smiles)
    assert round_trip(smiles, kekulize=True) == canonical(smiles)


def test_atom_order_counts_and_features_match_rdkit():
    smiles = "OC(=O)c1ccc(N)cc1[N+](=O)[O-]"
    mol = Chem.MolFromSmiles(smiles)
    g = mol_graph(smiles)
    assert g.version == FEATURISATION_VERSION == 1
    assert g.atoms.shape == (mol.GetNumAtoms(), len(ATOM_FEATURES))
    assert g.num_bonds == mol.GetNumBonds() and g.edge_index.shape == (2, 2 * mol.GetNumBonds())
    for a, row in zip(mol.GetAtoms(), g.atoms.tolist(), strict=True):
        assert row == [
            a.GetAtomicNum(),
            a.GetFormalCharge(),
            int(a.GetIsAromatic()),
            HYBRIDISATIONS.index(str(a.GetHybridization())),
            a.GetTotalNumHs(),
        ]
    for k, b in enumerate(mol.GetBonds()):
        i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
        assert g.edge_index[:, 2 * k].tolist() == [i, j]
        assert g.edge_index[:, 2 * k + 1].tolist() == [j, i]
        assert BOND_TYPES[g.bond_types[2 * k]] == str(b.GetBondType()).lower()
    back = graph_to_mol(g)
    assert [a.GetAtomicNum() for a in back.GetAtoms()] == g.atomic_numbers.tolist()


def test_kekulize_writes_single_and_double_bonds():
    aromatic, kekule = mol_graph("c1ccccc1"), mol_graph("c1ccccc1", kekulize=True)
    assert set(aromatic.bond_types.tolist()) == {BOND_TYPES.index("aromatic")}
    counts = np.bincount(kekule.bond_types, minlength=len(BOND_TYPES))
    assert counts[BOND_TYPES.index("single")] == counts[BOND_TYPES.index("double")] == 6
    assert kekule.kekulized and kekule.atoms[:, 2].tolist() == [1] * 6


def test_graph_to_mol_does_not_correct_valence():
    # a carbon with five single bonds to methyls: RDKit must refuse it, not repair it
    atoms = [[6, 0, 0, HYBRIDISATIONS.index("SP3"), 0]] + [[6, 0, 0, 4, 3]] * 5
    edges = np.array([[0, k, k, 0] for k in range(1, 6)]).reshape(-1, 2).T
    mol = graph_to_mol(MolGraph(np.array(atoms), edges, np.ones(10)))
    assert mol.GetNumAtoms() == 6 and mol.GetAtomWithIdx(0).GetDegree() == 5
    with pytest.raises(Chem.AtomValenceException):
        Chem.SanitizeMol(mol)


@needs_qm9
def test_3d_molecules_keep_positions_and_perceive_bonds():
    molecules = load("qm9", limit=200)
    ok = 0
    for m in molecules:
        try:
            g = mol_graph(m)
        except ValueError as e:  # e.g. bicyclo[1.1.1]pentane: no bond orders fit
            assert "source" in str(e) and m.name in str(e)
            continue
        np.testing.assert_array_equal(g.positions, m.positions)
        np.testing.assert_array_equal(g.atomic_numbers, m.numbers)
        mol = graph_to_mol(g)
        Chem.SanitizeMol(mol)
        assert mol.GetConformer().Is3D()
        ok += Chem.MolToSmiles(Chem.RemoveHs(mol)) == canonical(str(m.properties["smiles"]))
    assert ok >= 195, ok


def test_rdkit_conformer_gives_positions():
    from rdkit.Chem import rdDistGeom

    mol = Chem.AddHs(Chem.MolFromSmiles("CCO"))
    rdDistGeom.EmbedMolecule(mol, randomSeed=0)
    g = mol_graph(mol)
    np.testing.assert_allclose(g.positions, mol.GetConformer().GetPositions())
    np.testing.assert_allclose(graph_to_mol(g).GetConformer().GetPositions(), g.positions)
    assert mol_graph("CCO").positions is None


def test_to_torch_shapes_and_dtypes():
    torch = pytest.importorskip("torch")
    t = mol_graph("c1ccccc1O").to_torch()
    assert t["x"].shape == (7, 5) and t["x"].dtype == torch.int64
    assert t["edge_index"].shape == (2, 14) and t["edge_attr"].shape == (14,)
    assert "pos" not in t


def test_to_pyg():
    pytest.importorskip("torch_geometric", reason="torch_geometric not installed (extra 'graphs')")
    mol = Chem.AddHs(Chem.MolFromSmiles("CO"))
    from rdkit.Chem import rdDistGeom

    rdDistGeom.EmbedMolecule(mol, randomSeed=0)
    data = mol_graph(mol).to_pyg()
    assert data.num_nodes == 6 and data.num_edges == 10 and data.pos.shape == (6, 3)


def test_to_pyg_without_torch_geometric_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_geometric", None)
    monkeypatch.setitem(sys.modules, "torch_geometric.data", None)
    with pytest.raises(FileNotFoundError, match=r"shared-core\[graphs\]") as e:
        mol_graph("C").to_pyg()
    assert "\n" not in str(e.value)  # require_extra's one line


def test_bad_input():
    with pytest.raises(ValueError, match="source: invalid SMILES 'C1CC'"):
        mol_graph("C1CC")
    with pytest.raises(TypeError, match="source: expected a SMILES str.*got int"):
        mol_graph(3)
    with pytest.raises(TypeError, match="graph: expected a MolGraph"):
        graph_to_mol("CCO")
    with pytest.raises(ValueError, match="atoms: expected shape"):
        MolGraph(np.zeros((2, 3)), np.zeros((2, 0)), np.zeros(0))
    with pytest.raises(ValueError, match="edge_index: atom indices"):
        MolGraph(np.ones((2, 5)), np.array([[0, 2], [2, 0]]), np.ones(2))
    with pytest.raises(ValueError, match="both directions"):
        MolGraph(np.ones((2, 5)), np.array([[0, 0], [1, 1]]), np.ones(2))
    with pytest.raises(ValueError, match="version"):
        MolGraph(np.ones((1, 5)), np.zeros((2, 0)), np.zeros(0), version=2)


def test_graph_is_immutable():
    g = mol_graph("CCO")
    with pytest.raises(ValueError, match="read-only"):
        g.atoms[0, 0] = 7
