import numpy as np
import pytest
from meld_diffusion.evaluate import (
    DESCRIPTORS,
    descriptor_features,
    sample_metrics,
    type_histograms,
)


def test_training_rows_score_as_the_data(qm9_rows):
    rows, counts, smiles = qm9_rows
    r, c = rows.numpy(), counts.numpy()
    m = sample_metrics(
        r, c, 6, train_smiles=smiles, train_rows=r, train_counts=c, reference_smiles=smiles
    )
    assert m["validity"] == 1.0 and m["novelty"] == 0.0 and m["uniqueness"] == 1.0
    assert m["atom_tv"] == 0.0 and m["bond_tv"] == 0.0
    assert abs(m["desc_fd"]) < 1e-6


def test_histograms_count_existing_elements_only():
    rows = np.zeros((1, 6), dtype=np.int64)  # 3-atom layout: 3 atoms + 3 pairs
    rows[0, :3] = [0, 2, 3]  # C O (F in padding)
    rows[0, 3] = 1  # bond (0, 1)
    a, b = type_histograms(rows, np.array([2]), 3)
    assert a.tolist() == [0.5, 0.0, 0.5, 0.0]
    assert b.tolist() == [0.0, 1.0, 0.0, 0.0]


def test_descriptors_shape_and_errors():
    assert descriptor_features(["CCO", "c1ccccc1"]).shape == (2, len(DESCRIPTORS))
    with pytest.raises(ValueError, match="not a valid molecule"):
        descriptor_features(["C(C)(C)(C)(C)C"])
