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
    assert m["nspdk"] < 1e-12


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


def test_nspdk_matches_the_pairwise_definition_and_its_limits():
    from meld_diffusion.graph_metrics import _Interner, nspdk_features, nspdk_mmd
    from meld_diffusion.reference import nspdk_mmd_pairwise

    gen = ["CCO", "c1ccccc1", "CC(=O)N", "C1CC1"]
    ref = ["CCN", "OC1CC1", "c1ccncc1", "CC#N", "CCO"]
    fast = nspdk_mmd(gen, ref)
    assert 0.0 < fast < 2.0
    assert abs(fast - nspdk_mmd_pairwise(gen, ref)) < 1e-12
    assert nspdk_mmd(gen, gen) < 1e-12
    assert nspdk_mmd(gen, list(reversed(gen))) < 1e-12
    # the same molecule written with another atom order has the same features
    intern = _Interner()
    a, b = nspdk_features("OCC(N)=O", intern), nspdk_features("NC(=O)CO", intern)
    assert a == b and a != nspdk_features("OC(=O)CN", intern)
    assert np.isnan(nspdk_mmd([], ref))


def test_scaffold_similarity():
    from meld_diffusion.graph_metrics import murcko_scaffold, scaffold_similarity

    bicyclic = ["c1ccc2ccccc2c1", "Cc1ccc2ccccc2c1", "OC1CC2CCC1C2"]
    assert murcko_scaffold("Cc1ccc2ccccc2c1") == murcko_scaffold("c1ccc2ccccc2c1")
    assert murcko_scaffold("Cc1ccccc1") is None  # one ring < MOSES's min_rings = 2
    assert murcko_scaffold("Cc1ccccc1", min_rings=1) == "c1ccccc1"
    assert scaffold_similarity(bicyclic, bicyclic) == pytest.approx(1.0)
    # counts (2, 1) vs (0, 1): cosine 1 / sqrt(5)
    assert scaffold_similarity(bicyclic, ["OC1CC2CCC1C2"]) == pytest.approx(1 / np.sqrt(5))
    assert np.isnan(scaffold_similarity(["CCO"], bicyclic))
