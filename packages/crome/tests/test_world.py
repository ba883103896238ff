import random

import pytest
from crome import world as W
from hypothesis import given, settings
from hypothesis import strategies as st


@given(st.integers(0, 30), st.booleans(), st.booleans(), st.integers(0, len(W.FILLERS)))
@settings(max_examples=60, deadline=None)
def test_render_parse_roundtrip(value, preamble, bullets, filler):
    a = W.Answer(value, preamble, bullets, filler)
    assert W.parse_answer(a.render()) == a


def test_train_is_biased_and_counterfactual_is_flipped():
    w = W.make_world(W.WorldConfig(n_facts=20, n_train=400, n_test=400, seed=3))

    def dec_rate(rows, side):
        return sum(W.parse_answer(getattr(r, side)).preamble for r in rows) / len(rows)

    assert dec_rate(w.train, "chosen") > 0.8 and dec_rate(w.train, "rejected") < 0.2
    assert dec_rate(w.test_cf, "chosen") < 0.2 and dec_rate(w.test_cf, "rejected") > 0.8
    for r in w.train + w.test_cf:
        assert W.is_correct(r.prompt, r.chosen) and not W.is_correct(r.prompt, r.rejected)
    for _q, dec, plain in w.spurious:
        assert W.parse_answer(dec).value == W.parse_answer(plain).value
        assert W.parse_answer(dec).decoration != W.parse_answer(plain).decoration
    for q, good, bad in w.causal:
        assert W.parse_answer(good).decoration == W.parse_answer(bad).decoration
        assert W.is_correct(q, good) and not W.is_correct(q, bad)


def test_world_is_deterministic_under_seed():
    c = W.WorldConfig(n_train=30, n_test=10, seed=5)
    assert W.make_world(c) == W.make_world(c)
    assert W.make_world(c).train != W.make_world(W.WorldConfig(n_train=30, n_test=10, seed=6)).train


def test_wrong_value_is_never_correct():
    rng = random.Random(0)
    for c in range(0, 19):
        for _ in range(20):
            v = W.wrong_value(c, rng)
            assert v != c and v >= 0


def test_world_errors():
    with pytest.raises(ValueError, match="p_spurious"):
        W.WorldConfig(p_spurious=0.2)
    with pytest.raises(ValueError, match="n_train"):
        W.WorldConfig(n_train=0)
    with pytest.raises(ValueError, match="prompt"):
        W.parse_prompt("How are you?")
    with pytest.raises(ValueError, match="text"):
        W.parse_answer("no number here")
    with pytest.raises(ValueError, match="filler"):
        W.Answer(3, filler=9)
    assert W.gold_reward("What is 1 + 2?", "garbage") == 0.0
