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
