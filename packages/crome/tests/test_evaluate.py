import pytest
import torch
from crome import reference
from crome import world as W
from crome.data import PairRow
from crome.evaluate import (
    EXAMPLE_COUNTS,
    SUBSET_MAPPING,
    best_of_n,
    pairwise_accuracy,
    rewardbench_scores,
    section_scores,
    sensitivity,
)
from hypothesis import given, settings
from hypothesis import strategies as st


class LengthRM:
    """A stand-in reward model: reward = answer length (a purely spurious scorer)."""

    def score(self, prompts, answers, batch_size=64):
        return torch.tensor([float(len(a)) for a in answers])

    def margins(self, prompts, first, second, batch_size=64):
        return self.score(prompts, first) - self.score(prompts, second)


@given(st.dictionaries(st.sampled_from(sorted(EXAMPLE_COUNTS)), st.floats(0, 1), min_size=1))
@settings(max_examples=50, deadline=None)
def test_section_scores_match_reference(acc):
    got = section_scores(acc)
    want = reference.section_scores(acc, EXAMPLE_COUNTS, SUBSET_MAPPING)
    assert got.keys() == want.keys()
    for k in got:
        assert got[k] == pytest.approx(want[k])


def test_reasoning_weights_math_like_all_code_together():
    acc = {
        "math-prm": 1.0,
        **{f"hep-{x}": 0.0 for x in ("cpp", "go", "java", "js", "python", "rust")},
    }
    assert section_scores(acc)["Reasoning"] == pytest.approx(0.5)


def test_pairwise_accuracy_is_strict_and_by_subset():
    rows = [
        PairRow("q", "long answer", "short", subset="a"),
        PairRow("q", "short", "long answer", subset="a"),
        PairRow("q", "same", "same", subset="b"),  # a tie counts as wrong
    ]
    acc = pairwise_accuracy(LengthRM(), rows)
    assert acc == {"a": 0.5, "b": 0.0}
    scores = rewardbench_scores(LengthRM(), rows, mapping={"S": ["a", "b"]})
    assert scores["S"] == pytest.approx(1 / 3) and scores["Score"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="rows"):
        pairwise_accuracy(LengthRM(), [])


def test_best_of_n_exposes_a_spurious_scorer():
    prompts = ["What is 1 + 1?", "What is 2 + 2?"]
    cands = [
        [W.Answer(2).render(), W.Answer(3, preamble=True, filler=3).render()],
        [W.Answer(4).render(), W.Answer(5, bullets=True, filler=2).render()],
    ]
    out = best_of_n(LengthRM(), prompts, cands, W.gold_reward)
    assert out["rm"] == 0.0 and out["oracle"] == 1.0
    with pytest.raises(ValueError, match="candidates"):
        best_of_n(LengthRM(), prompts, cands[:1], W.gold_reward)
    with pytest.raises(ValueError, match="candidates"):
        best_of_n(LengthRM(), prompts[:1], [[]], W.gold_reward)


def test_sensitivity():
    assert sensitivity(LengthRM(), [("q", "aaa", "a"), ("q", "a", "aaa")]) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="triples"):
        sensitivity(LengthRM(), [])
