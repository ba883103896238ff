from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from _molecules import TEN_SMILES
from edt_former.atoms import parse_smiles
from edt_former.data import Encoded, build_qa
from edt_former.experiments.qa import (
    SCALES,
    _base_llm,
    arm_encoding,
    majority_accuracy,
    train_arm,
)
from edt_former.patching import brics_group_ids

QM9 = TEN_SMILES * 2


@pytest.fixture(scope="module")
def setup() -> tuple[object, Encoded, tuple[object, object]]:
    rng = np.random.default_rng(0)
    qa = build_qa(QM9, rng.normal(size=(len(QM9), 2)), ("gap", "mu"), seed=0)
    g = torch.Generator().manual_seed(0)
    brics = [brics_group_ids(s) for s in qa.smiles]
    enc = Encoded(
        nodes=[torch.randn(len(b), 8, generator=g) for b in brics],
        brics=brics,
        entropy=[np.arange(len(b)) // 2 for b in brics],
        peak=[np.arange(len(b)) // 3 for b in brics],
    )
    return qa, enc, _base_llm(SCALES["micro"])


@pytest.mark.parametrize(
    ("arm", "stage1"),
    [
        ("edt-former", 2),
        ("static", 0),
        ("smiles-prompt", 0),
        ("shuffled-labels", 0),
        ("static+entropy", 0),
        ("static+peak", 0),
        ("edt-former-peak", 0),
    ],
)
def test_every_arm_trains_and_scores(setup: tuple, arm: str, stage1: int) -> None:
    qa, enc, base = setup
    c = replace(SCALES["micro"], steps=2, batch_size=4, stage1_steps=stage1)
    r = train_arm(arm, 4, c, 0, qa, enc, base)
    n_test = len(qa.rows("test")[0])
    assert len(r["correct"]) == n_test and 0.0 <= r["accuracy"] <= 1.0
    assert r["trainable"] > 0
    if arm == "smiles-prompt":
        assert np.isnan(r["tokens"])
        assert r["trainable"] == 3 * base[0].config.hidden_size  # the new token rows only
    else:
        assert r["tokens"] >= 2  # static queries at least


def test_majority_accuracy_bounds(setup: tuple) -> None:
    qa, _, _ = setup
    assert 0.0 <= majority_accuracy(qa) <= 1.0


def test_reproduce_refuses_cuda() -> None:
    from edt_former.experiments.qa import reproduce

    from shared_core.cli import ReproduceArgs, UsageError

    with pytest.raises(UsageError, match="CPU only"):
        reproduce(ReproduceArgs(scale="micro", device="cuda", config=SCALES["micro"]))


@pytest.mark.parametrize("questions", [(), ("gap", "colour")])
def test_unknown_questions_raise(questions: tuple[str, ...]) -> None:
    from edt_former.experiments.qa import prepare

    with pytest.raises(ValueError, match="questions: expected a non-empty subset"):
        prepare(replace(SCALES["micro"], questions=questions))


def test_peak_arms_read_the_peak_patches(setup: tuple) -> None:
    _, enc, _ = setup
    for arm in ("static+peak", "edt-former-peak"):
        assert arm_encoding(arm, enc).entropy is enc.peak
    for arm in ("static+entropy", "edt-former", "static"):
        assert arm_encoding(arm, enc) is enc
    with pytest.raises(ValueError, match="peak-rule patches"):
        arm_encoding("static+peak", replace(enc, peak=None))


def test_zinc_group_counts_and_question() -> None:
    from edt_former.experiments.zinc import group_count, zinc_qa

    assert group_count("CC(=O)NC", "amide") == 1
    assert group_count("CC(=O)OC", "amide") == 0
    assert group_count("CC(=O)OC", "ester") == 1
    assert group_count("ClCCBr", "halogen") == 2
    with pytest.raises(ValueError, match="question"):
        group_count("CC", "nitro-ish")
    with pytest.raises(ValueError, match="n: expected"):
        zinc_qa(3)
    qa = zinc_qa(40, "amide", seed=0)
    mols, qs, ys = qa.rows("train")
    assert set(qs) == {"amide"} and len(mols) == len(qa.train)
    want = [int(group_count(qa.smiles[m], "amide") > 0) for m in mols]
    assert ys.tolist() == want
    # ZINC leads are large enough for patching to matter (QM9: <= 9 heavy atoms)
    assert np.mean([parse_smiles(s).GetNumHeavyAtoms() for s in qa.smiles]) > 15


def test_zinc_aromatic_rings_is_a_counting_question_above_the_training_median() -> None:
    """Not at ceiling like "contains an amide": more aromatic rings than the median, asked in
    words the tiny LLM already reads (its random weights, hence every table, stay)."""
    from edt_former.data import QUESTIONS
    from edt_former.experiments.zinc import group_count, zinc_qa
    from edt_former.llm import tiny_vocabulary

    assert group_count("c1ccccc1-c1ccncc1", "aromatic_rings") == 2
    assert group_count("C1CCCCC1", "aromatic_rings") == 0
    words = set(tiny_vocabulary())
    assert set(QUESTIONS["aromatic_rings"].split()) <= words
    qa = zinc_qa(200, "aromatic_rings", seed=0)
    counts = np.asarray([group_count(s, "aromatic_rings") for s in qa.smiles])
    median = float(np.median(counts[qa.train]))
    assert qa.thresholds["aromatic_rings"] == median
    mols, qs, ys = qa.rows("train")
    assert set(qs) == {"aromatic_rings"}
    assert ys.tolist() == [int(counts[m] > median) for m in mols]
    assert 0.15 < ys.mean() < 0.6  # both answers common: majority far from 1
