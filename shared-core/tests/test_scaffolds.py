import numpy as np
import pytest

from shared_core.data import murcko_scaffolds, scaffold_split

pytest.importorskip("rdkit", reason="RDKit not installed (extra 'chem')")

# 10 molecules, scaffold sets of size 4 (benzene), 3 (pyridine), 2 (acyclic ""), 1 (cyclohexane)
SMILES = [
    "Cc1ccccc1", "CCO", "Oc1ccccc1", "c1ccncc1", "Nc1ccccc1",
    "CC1CCCCC1", "Cc1ccncc1", "CCCN", "Clc1ccccc1", "Oc1ccncc1",
]  # fmt: skip


def test_murcko_scaffolds():
    scaffolds = murcko_scaffolds(SMILES)
    assert scaffolds[0] == scaffolds[2] == "c1ccccc1" and scaffolds[3] == "c1ccncc1"
    assert scaffolds[1] == scaffolds[7] == "" and scaffolds[5] == "C1CCCCC1"


def test_deterministic_split_fills_largest_scaffolds_first():
    train, valid, test = scaffold_split(SMILES, (0.7, 0.2, 0.1))
    assert train.tolist() == [0, 2, 3, 4, 6, 8, 9]  # benzene (4) + pyridine (3) fill 70%
    assert valid.tolist() == [1, 7] and test.tolist() == [5]


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_no_scaffold_crosses_parts(seed):
    parts = scaffold_split(SMILES, (0.5, 0.5), seed=seed)
    assert sorted(np.concatenate(parts).tolist()) == list(range(len(SMILES)))
    scaffolds = np.asarray(murcko_scaffolds(SMILES))
    assert not set(scaffolds[parts[0]]) & set(scaffolds[parts[1]])
    again = scaffold_split(SMILES, (0.5, 0.5), seed=seed)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True))


def test_bad_input():
    with pytest.raises(ValueError, match="smiles: entry 1 is not a valid SMILES string: 'C1CC'"):
        scaffold_split(["CCO", "C1CC"])
    with pytest.raises(ValueError, match="smiles: expected a non-empty sequence"):
        scaffold_split("CCO")
    with pytest.raises(ValueError, match="fractions"):
        scaffold_split(SMILES, (0.5, 0.6))
