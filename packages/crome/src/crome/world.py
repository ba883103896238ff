"""A controlled preference world where the causal and spurious attributes are known exactly.

Prompts are single-digit sums ("What is 3 + 4?"): a closed fact table the reward model can
memorise. An answer has one CAUSAL attribute, the correctness of its final value, and three
SPURIOUS ones: a polite preamble, bullet formatting and 0-3 filler sentences (length). The
true reward depends only on correctness, R*(Q, A) = 1[value(A) = a + b].

In the biased training split the preferred (correct) answer carries each spurious feature
with probability `p_spurious` and the rejected one with probability ``1 - p_spurious``, so
"decorated => good" is a shortcut. The counterfactual test flips that correlation.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace

from crome.data import PairRow

PREAMBLE = "Great question!"
FILLERS = ("Let me think.", "Sums are easy.", "Here it is.")
RUBRIC = "correctness of the final value"
_PROMPT_RE = re.compile(r"^What is (\d+) \+ (\d+)\?$")
_VALUE_RE = re.compile(r"(?:The answer is|Answer:) (-?\d+)\.")


@dataclass(frozen=True)
class Answer:
    """An answer's attributes: `value` (causal) and `preamble`, `bullets`, `filler` (spurious)."""

    value: int
    preamble: bool = False
    bullets: bool = False
    filler: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.filler <= len(FILLERS):
            raise ValueError(f"filler: expected 0..{len(FILLERS)} sentences, got {self.filler}")

    @property
    def decoration(self) -> tuple[bool, bool, int]:
        return (self.preamble, self.bullets, self.filler)

    def render(self) -> str:
        """The answer text; the attributes can be read back with `parse_answer`."""
        parts = []
        if self.preamble:
            parts.append(PREAMBLE)
        parts.extend(FILLERS[: self.filler])
        if self.bullets:
            parts.append(f"- Answer: {self.value}.")
        else:
            parts.append(f"The answer is {self.value}.")
        return "\n".join(parts) if self.bullets else " ".join(parts)


def vocabulary() -> list[str]:
    """Every word and punctuation token of the world's prompts and answers, lower-cased.

    The vocabulary of `crome.model.random_bert` for smoke runs (values up to 30).
    """
    texts = [PREAMBLE, *FILLERS, "The answer is", "- Answer:", "What is + ?", "."]
    words = {w.lower() for t in texts for w in re.findall(r"\w+|[^\w\s]", t)}
    return sorted(words | {str(i) for i in range(31)})


def render_prompt(a: int, b: int) -> str:
    return f"What is {a} + {b}?"


def parse_prompt(prompt: str) -> tuple[int, int]:
    m = _PROMPT_RE.match(prompt.strip())
    if m is None:
        raise ValueError(f"prompt: not a world prompt 'What is a + b?', got {prompt!r}")
    return int(m.group(1)), int(m.group(2))


def final_value(text: str) -> int:
    """The causal content of an answer: its final value ('The answer is N.' or 'Answer: N.').

    The only reader of answer text that augmentation (oracle, verifier, IQN veto) uses; the
    spurious attributes are read by `parse_answer`, which only the evaluation calls.
    """
    m = _VALUE_RE.search(text)
    if m is None:
        raise ValueError(f"text: no final value ('The answer is N.' or 'Answer: N.') in {text!r}")
    return int(m.group(1))


def with_value(text: str, value: int) -> str:
    """`text` with its final value replaced by `value`, every other character unchanged."""
    final_value(text)  # raises when there is no value to replace
    return _VALUE_RE.sub(lambda m: m.group(0).replace(m.group(1), str(value)), text, count=1)


def states_value(sentence: str) -> bool:
    """Does `sentence` carry the causal content (a final-value statement)?"""
    return _VALUE_RE.search(sentence) is not None


def parse_answer(text: str) -> Answer:
    """Read an answer's attributes back from its text (exact inverse of `Answer.render`).

    Reads the spurious attributes: for the evaluation and the oracle-knows-spurious ablation
    arm only (`crome.oracle.ProgrammaticOracle` with ``neutral="oracle-knows-spurious"``).
    """
    return Answer(
        value=final_value(text),
        preamble=PREAMBLE in text,
        bullets="- Answer:" in text,
        filler=sum(f in text for f in FILLERS),
    )


def is_correct(prompt: str, text: str) -> bool:
    """The causal attribute: does the answer's final value equal a + b?"""
    a, b = parse_prompt(prompt)
    return final_value(text) == a + b


def gold_reward(prompt: str, text: str) -> float:
    """R*(Q, A): 1 for a correct value, 0 otherwise; the held-out gold scorer."""
    try:
        return float(is_correct(prompt, text))
    except ValueError:
        return 0.0


def wrong_value(correct: int, rng: random.Random) -> int:
    """A plausible wrong value: off by 1-3, never negative, never the correct one."""
    while True:
        v = correct + rng.choice((-3, -2, -1, 1, 2, 3))
        if v >= 0 and v != correct:
            return v


def decoration(rng: random.Random, p: float) -> dict[str, object]:
    """Each spurious feature present independently with probability `p`."""
    return {
        "preamble": rng.random() < p,
        "bullets": rng.random() < p,
        "filler": (2 + rng.randint(0, 1)) if rng.random() < p else rng.randint(0, 1),
    }


def facts(n_facts: int = 100) -> list[tuple[int, int]]:
    """The first `n_facts` sums (a, b) with a, b in 0..9, in a fixed shuffled order."""
    if not 1 <= n_facts <= 100:
        raise ValueError(f"n_facts: expected 1..100, got {n_facts}")
    all_facts = [(a, b) for a in range(10) for b in range(10)]
    random.Random(1234).shuffle(all_facts)
    return all_facts[:n_facts]


@dataclass(frozen=True)
class WorldConfig:
    """Sizes of the world. `p_spurious` is P(feature | preferred) in the biased splits."""

    n_facts: int = 60
    n_train: int = 600
    n_test: int = 300
    p_spurious: float = 0.9
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.5 <= self.p_spurious <= 1.0:
            raise ValueError(
                f"p_spurious: expected a probability in [0.5, 1], got {self.p_spurious}"
            )
        for name in ("n_facts", "n_train", "n_test", "seed"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"{name}: expected an int, got {type(v).__name__} {v!r}")
        for name in ("n_train", "n_test"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: expected a positive count, got {getattr(self, name)}")
        if not 1 <= self.n_facts <= 100:
            raise ValueError(f"n_facts: expected 1..100 single-digit sums, got {self.n_facts}")


def preference_pairs(
    n: int, p_good: float, rng: random.Random, fact_list: list[tuple[int, int]], subset: str
) -> list[PairRow]:
    """`n` pairs (correct > wrong); each spurious feature is on the correct answer with
    probability `p_good` and on the wrong answer with probability ``1 - p_good``."""
    rows = []
    for _ in range(n):
        a, b = rng.choice(fact_list)
        good = Answer(a + b, **decoration(rng, p_good))  # type: ignore[arg-type]
        bad = Answer(wrong_value(a + b, rng), **decoration(rng, 1.0 - p_good))  # type: ignore[arg-type]
        rows.append(
            PairRow(
                render_prompt(a, b),
                good.render(),
                bad.render(),
                subset=subset,
                meta={"a": a, "b": b},
            )
        )
    return rows


def spurious_pairs(
    n: int, rng: random.Random, fact_list: list[tuple[int, int]]
) -> list[tuple[str, str, str]]:
    """(prompt, decorated, plain) triples: the same value, all spurious features on vs off."""
    out = []
    for _ in range(n):
        a, b = rng.choice(fact_list)
        v = a + b if rng.random() < 0.5 else wrong_value(a + b, rng)
        plain = Answer(v, filler=0)
        dec = replace(plain, preamble=True, bullets=True, filler=rng.randint(2, 3))
        out.append((render_prompt(a, b), dec.render(), plain.render()))
    return out


def causal_pairs(
    n: int, rng: random.Random, fact_list: list[tuple[int, int]]
) -> list[tuple[str, str, str]]:
    """(prompt, correct, wrong) triples with identical decoration: only correctness differs."""
    out = []
    for _ in range(n):
        a, b = rng.choice(fact_list)
        d = decoration(rng, 0.5)
        good = Answer(a + b, **d)  # type: ignore[arg-type]
        bad = replace(good, value=wrong_value(a + b, rng))
        out.append((render_prompt(a, b), good.render(), bad.render()))
    return out


@dataclass(frozen=True)
class World:
    """The splits: biased `train`, i.i.d. `test_iid`, counterfactual `test_cf` (spurious
    correlation flipped), and the probes `spurious` (decoration only) and `causal`."""

    train: list[PairRow]
    test_iid: list[PairRow]
    test_cf: list[PairRow]
    spurious: list[tuple[str, str, str]]
    causal: list[tuple[str, str, str]]


def make_world(config: WorldConfig = WorldConfig()) -> World:
    """Generate the world deterministically from `config.seed`."""
    rng = random.Random(config.seed)
    fl = facts(config.n_facts)
    p = config.p_spurious
    return World(
        train=preference_pairs(config.n_train, p, rng, fl, "world-train"),
        test_iid=preference_pairs(config.n_test, p, rng, fl, "world-iid"),
        test_cf=preference_pairs(config.n_test, 1.0 - p, rng, fl, "world-counterfactual"),
        spurious=spurious_pairs(config.n_test, rng, fl),
        causal=causal_pairs(config.n_test, rng, fl),
    )
