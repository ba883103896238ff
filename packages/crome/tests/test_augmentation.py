import random

import numpy as np
import pytest
from crome import world as W
from crome.augmentation import (
    AugmentConfig,
    augment,
    filter_augmentations,
    irrelevant_query_neutrals,
    world_irrelevant,
    world_verifier,
)
from crome.data import PairRow
from crome.oracle import ProgrammaticOracle
from hypothesis import given, settings
from hypothesis import strategies as st


@given(
    st.lists(st.sampled_from(["q1", "q2", "q3", "q4"]), min_size=1, max_size=30), st.integers(0, 99)
)
@settings(max_examples=60, deadline=None)
def test_iqn_never_pairs_a_response_with_its_own_prompt(prompts, seed):
    rows = [PairRow(q, f"good {i}", f"bad {i}") for i, q in enumerate(prompts)]
    pool = [*prompts, "other"]
    out = irrelevant_query_neutrals(rows, pool, random.Random(seed))
    assert len(out) == len(rows)
    for n in out:
        src = rows[n.meta["source"]]
        assert n.label == "tie" and n.provenance == "neutral-iqn"
        assert n.prompt != src.prompt and n.meta["from"] == src.prompt
        assert (n.chosen, n.rejected) == (src.chosen, src.rejected)


def test_iqn_in_the_world_avoids_prompts_an_answer_is_correct_for():
    w = W.make_world(W.WorldConfig(n_facts=30, n_train=200, n_test=2))
    out = irrelevant_query_neutrals(
        w.train, [r.prompt for r in w.train], random.Random(0), world_irrelevant
    )
    assert len(out) > 150
    for n in out:
        assert not W.is_correct(n.prompt, n.chosen) and not W.is_correct(n.prompt, n.rejected)


def test_iqn_needs_another_prompt():
    with pytest.raises(ValueError, match="prompts"):
        irrelevant_query_neutrals([PairRow("q", "a", "b")], ["q"], random.Random(0))


def test_programmatic_augmentations_are_exact_and_accepted():
    w = W.make_world(W.WorldConfig(n_train=40, n_test=2))
    aug, stats = augment(
        w.train,
        ProgrammaticOracle(),
        AugmentConfig(),
        verify=world_verifier,
        irrelevant=world_irrelevant,
    )
    assert stats.acceptance_rate == 1.0
    kinds = {r.provenance for r in aug}
    assert kinds == {"causal-degrade", "causal-upgrade", "neutral-iqn", "neutral-causal-aligned"}
    for r in aug:
        if r.label == "preference":
            assert W.is_correct(r.prompt, r.chosen) and not W.is_correct(r.prompt, r.rejected)
            assert W.parse_answer(r.chosen).decoration == W.parse_answer(r.rejected).decoration
        elif r.provenance == "neutral-causal-aligned":
            assert W.is_correct(r.prompt, r.chosen) == W.is_correct(r.prompt, r.rejected)


def test_world_verifier_rejects_wrong_direction_and_style_leaks():
    q = "What is 2 + 3?"
    plain_wrong = W.Answer(4).render()
    assert world_verifier("upgrade", q, plain_wrong, W.Answer(5).render())
    assert not world_verifier("upgrade", q, plain_wrong, W.Answer(5, preamble=True).render())
    assert not world_verifier("upgrade", q, plain_wrong, W.Answer(6).render())
    assert not world_verifier("degrade", q, W.Answer(5).render(), "I do not know")
    assert not world_verifier(
        "neutral", q, W.Answer(5).render(), W.Answer(4, bullets=True).render()
    )


def test_filter_rule():
    rows = [
        PairRow("q", "a", "b"),
        PairRow("q", "a", "b"),
        PairRow("q", "a", "b", label="tie"),
        PairRow("q", "a", "b", label="tie"),
        PairRow("q", "a", "b", label="tie"),
    ]
    # sigma(3) = 0.95 (confident, drop), sigma(-1) = 0.27 (wrong, keep);
    # tie: sigma(0.1) = 0.525 (already tied, drop), sigma(2) = 0.88 and sigma(-2) = 0.12 (keep)
    kept = filter_augmentations(rows, np.array([3.0, -1.0, 0.1, 2.0, -2.0]), tau=0.9, delta=0.1)
    assert kept == [rows[1], rows[3], rows[4]]
    assert filter_augmentations(rows, np.zeros(5), tau=1.0, delta=0.0) == rows[:2]
    with pytest.raises(ValueError, match="margins"):
        filter_augmentations(rows, np.zeros(4))
    with pytest.raises(ValueError, match="margins"):
        filter_augmentations(rows, np.full(5, np.nan))
    with pytest.raises(ValueError, match="tau"):
        filter_augmentations(rows, np.zeros(5), tau=0.2)
    with pytest.raises(ValueError, match="delta"):
        filter_augmentations(rows, np.zeros(5), delta=0.7)


def test_augment_errors():
    with pytest.raises(ValueError, match="rows"):
        augment([], ProgrammaticOracle())
    with pytest.raises(ValueError, match="tie"):
        augment([PairRow("What is 1 + 1?", "a", "b", label="tie")], ProgrammaticOracle())
