"""Issue 49: the neutral rewrite is made without knowledge of the spurious attributes."""

import ast
import inspect
import random

import pytest
from crome import rewrite
from crome import world as W
from crome.augmentation import world_verifier
from crome.oracle import ProgrammaticOracle
from crome.rewrite import DISCOURSE, OPERATIONS, generic_rewrite, sentences


class _Poison:
    """Stands in for a spurious-attribute definition: any use of it fails the test."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _fail(self, *args, **kwargs):
        raise AssertionError(f"the generic rewrite read the world's spurious {self.name}")

    __call__ = __iter__ = __len__ = __str__ = __contains__ = __getitem__ = _fail
    __eq__ = __hash__ = __bool__ = _fail  # type: ignore[assignment]

    def __getattr__(self, attr):
        self._fail()


def _planted(n: int = 300) -> list:
    w = W.make_world(W.WorldConfig(n_facts=100, n_train=n, n_test=n, seed=7))
    return [(r.prompt, r.chosen) for r in w.train] + [(r.prompt, r.rejected) for r in w.test_cf]


def test_generic_rewrite_module_knows_nothing_of_the_world():
    src = inspect.getsource(rewrite)
    tree = ast.parse(src)
    imported = [
        n.module if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in (n.names if isinstance(n, ast.Import) else [None])
    ]
    assert not any(m and m.startswith("crome") for m in imported), imported
    for planted in (W.PREAMBLE, *W.FILLERS, "- Answer:", "preamble", "filler", "decoration"):
        assert planted.lower() not in src.lower(), planted
    assert not set(DISCOURSE) & {W.PREAMBLE, *W.FILLERS}


def test_generic_neutral_never_reads_the_spurious_definitions_and_keeps_the_causal_value(
    monkeypatch,
):
    """Acceptance (issue 49): with every spurious-attribute definition of the world poisoned,
    the generic neutral rewrite (and its verifier) still runs, and the causal attribute (the
    final value, hence correctness) is preserved on 100 % of a planted sample."""
    sample = _planted()
    expected = [(q, a, W.final_value(a), W.is_correct(q, a)) for q, a in sample]
    oracle = ProgrammaticOracle(seed=3)
    for name in ("PREAMBLE", "FILLERS", "parse_answer", "decoration", "Answer"):
        monkeypatch.setattr(W, name, _Poison(name))
    out = [oracle.neutral_rewrite(q, a, [W.RUBRIC]) for q, a, _, _ in expected]
    accepted = [
        world_verifier("neutral", q, a, n) for (q, a, _, _), n in zip(expected, out, strict=True)
    ]
    monkeypatch.undo()
    assert all(accepted)
    assert [W.final_value(n) for n in out] == [v for _, _, v, _ in expected]
    assert [W.is_correct(q, n) for (q, _, _, _), n in zip(expected, out, strict=True)] == [
        c for _, _, _, c in expected
    ]
    assert all(n != a for (_, a, _, _), n in zip(expected, out, strict=True))
    # a rewrite, not a copy with one token changed: the family reaches every operation
    changed = sum(W.parse_answer(n).decoration != W.parse_answer(a).decoration
                  for (_, a, _, _), n in zip(expected, out, strict=True))  # fmt: skip
    assert 0 < changed < len(out)  # it touches planted features only by accident


def test_causal_rewrites_and_verifier_are_blind_to_decoration(monkeypatch):
    sample = _planted(40)
    oracle = ProgrammaticOracle(seed=1)
    for name in ("PREAMBLE", "FILLERS", "parse_answer", "decoration", "Answer"):
        monkeypatch.setattr(W, name, _Poison(name))
    for q, a in sample:
        kind = "degrade" if W.is_correct(q, a) else "upgrade"
        new = oracle.rewrite(q, a, W.RUBRIC, kind)
        assert world_verifier(kind, q, a, new)


def test_oracle_knows_spurious_arm_redraws_the_planted_features():
    oracle = ProgrammaticOracle(seed=0, neutral="oracle-knows-spurious")
    for q, a in _planted(50):
        n = oracle.neutral_rewrite(q, a, [W.RUBRIC])
        assert W.parse_answer(n).value == W.parse_answer(a).value
        assert W.parse_answer(n).decoration != W.parse_answer(a).decoration
        assert world_verifier("neutral", q, a, n)


def test_generic_rewrite_never_drops_or_edits_a_kept_sentence():
    text = "First point. Second point!\n- KEEP 7.\nThird point?"
    seen_ops = set()
    for seed in range(200):
        out = generic_rewrite(text, random.Random(seed), keep=lambda s: "KEEP" in s)
        assert "KEEP 7." in out and out != text
        seen_ops.add(len(sentences(out)) - len(sentences(text)))
    assert {-1, 0, 1} <= seen_ops  # condense, reorder/relayout, elaborate all happen
    assert generic_rewrite(text, random.Random(5)) == generic_rewrite(text, random.Random(5))
    assert len(OPERATIONS) == 5


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"text": ""}, "text: expected a non-empty answer string"),
        ({"text": None}, "text: expected a non-empty answer string"),
        ({"n_ops": (0, 2)}, "n_ops: expected"),
        ({"n_ops": (3, 2)}, "n_ops: expected"),
    ],
)
def test_generic_rewrite_bad_input(kwargs, match):
    args = {"text": "An answer.", "rng": random.Random(0), **kwargs}
    with pytest.raises(ValueError, match=match):
        generic_rewrite(**args)


def test_programmatic_oracle_rejects_an_unknown_neutral_mode():
    with pytest.raises(ValueError, match="neutral: expected one of"):
        ProgrammaticOracle(neutral="style")
