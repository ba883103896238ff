from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from edt_former.data import Encoded, build_qa
from edt_former.experiments.qa import SCALES, _base_llm, majority_accuracy, train_arm
from edt_former.patching import brics_group_ids

QM9 = [
    "CCO",
    "c1ccccc1",
    "CC#N",
    "C1CC1N",
    "NC(=O)C",
    "c1ccncc1",
    "CCCC",
    "OCCO",
    "C1CCOC1",
    "CN(C)C",
] * 2


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
