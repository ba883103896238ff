"""A planted world where the causal attribute is learnable: the CROME RM must rank it.

Issue 14: in the reproduce the CROME RM stopped relying on decoration but never learned the
causal attribute, and no test noticed. Here the causal rubric is RELEVANCE (the answer names
the prompt's topic, so the reward needs a prompt-answer interaction, as correctness of a sum
does) and the spurious attribute is a polite preamble on 90% of preferred answers. The whole
public pipeline runs: an `Oracle` implementation, `augment`, the baseline filter,
`train_reward_model` with the tie loss, on a random 2-layer BERT (seconds on one CPU thread).

Measured while writing this test (seed 0, lambda 1): after 40 steps neither RM learns
relevance (CROME causal accuracy 0.59, counterfactual 0.13); after 300 steps the CROME RM
reaches 0.97 / 0.94 while the standard RM stays at chance (0.47) with counterfactual 0.11,
and training on the causal augmentations without the neutral ties reaches only 0.78 / 0.52.
Seeds 0-3 at 300 steps (crome 0.3.0, one thread): causal preference CROME 0.94 / 0.84 / 0.97 /
1.00 vs standard 0.63 / 0.44 / 0.53 / 0.38; counterfactual 0.95 / 0.98 / 0.77 / 0.91 vs
0.08-0.09; so the tests assert on the mean of seeds 0-2.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from crome.augmentation import AugmentConfig, augment, basic_verifier, filter_augmentations
from crome.data import PairRow
from crome.evaluate import pairwise_accuracy, sensitivity, signed_preference
from crome.model import RewardModel, random_bert
from crome.train import TrainConfig, train_reward_model

TOPICS = ("tea", "rain", "maps", "bread", "chess", "boats", "songs", "trees")
PREAMBLE = "great question !"
WORDS = [
    *["tell", "me", "about", "?", "great", "question", "!", "is", "a", "fine", "topic", "."],
    *TOPICS,
]


def prompt(topic: str) -> str:
    return f"tell me about {topic} ?"


def answer(topic: str, polite: bool) -> str:
    return (PREAMBLE + " " if polite else "") + f"{topic} is a fine topic ."


def topic_of(text: str) -> str:
    return next(t for t in TOPICS if f"{t} is" in text)


def prompt_topic(question: str) -> str:
    return question.split()[-2]


def another(topic: str, rng: random.Random) -> str:
    return rng.choice([t for t in TOPICS if t != topic])


def preference_pairs(n: int, p_polite: float, rng: random.Random, subset: str) -> list[PairRow]:
    """Relevant > irrelevant; the preamble sits on the relevant answer with prob. `p_polite`."""
    rows = []
    for _ in range(n):
        t = rng.choice(TOPICS)
        good = answer(t, rng.random() < p_polite)
        bad = answer(another(t, rng), rng.random() < 1 - p_polite)
        rows.append(PairRow(prompt(t), good, bad, subset=subset))
    return rows


class RelevanceOracle:
    """The exact oracle of the planted world: one rubric, single-attribute rewrites."""

    name = "planted-relevance"

    def rubrics(self, question: str) -> list[str]:
        return ["relevance"]

    def rewrite(self, question: str, answer_text: str, rubric: str, direction: str) -> str:
        t = prompt_topic(question)
        new = t if direction == "upgrade" else another(t, random.Random(answer_text))
        return answer_text.replace(f"{topic_of(answer_text)} is", f"{new} is")

    def neutral_rewrite(self, question: str, answer_text: str, rubrics: list[str]) -> str:
        if answer_text.startswith(PREAMBLE):
            return answer_text[len(PREAMBLE) + 1 :]
        return PREAMBLE + " " + answer_text


def irrelevant(question: str, row: PairRow) -> bool:
    t = prompt_topic(question)
    return t not in (topic_of(row.chosen), topic_of(row.rejected))


def train_both(steps: int, seed: int = 0) -> dict[str, RewardModel | list[PairRow]]:
    rng = random.Random(seed)
    train = preference_pairs(64, 0.9, rng, "iid")
    cfg = TrainConfig(
        steps=steps,
        batch_size=16,
        lr_encoder=3e-3,
        lr_head=1e-2,
        trainable_layers=-1,
        device="cpu",
        seed=seed,
    )
    standard = random_bert(WORDS, seed=seed)
    init = {k: v.clone() for k, v in standard.state_dict().items()}
    train_reward_model(standard, train, cfg)
    aug, stats = augment(
        train,
        RelevanceOracle(),
        AugmentConfig(seed=seed),
        verify=basic_verifier,
        irrelevant=irrelevant,
    )
    assert stats.acceptance_rate == 1.0
    margins = standard.margins(
        [r.prompt for r in aug], [r.chosen for r in aug], [r.rejected for r in aug]
    )
    kept = filter_augmentations(aug, margins.numpy())
    crome = random_bert(WORDS, seed=seed)
    crome.load_state_dict(init)
    train_reward_model(crome, train + kept, replace(cfg, lam=1.0))
    return {"standard": standard, "crome": crome, "kept": kept}


def probes(seed: int = 1) -> dict[str, list]:
    rng = random.Random(seed)
    causal = [
        (prompt(t), answer(t, polite), answer(another(t, rng), polite))
        for t in TOPICS
        for polite in (False, True)
        for _ in range(2)
    ]
    spurious = [
        (prompt(t), answer(u, True), answer(u, False)) for t in TOPICS for u in (t, another(t, rng))
    ]
    return {
        "causal": causal,
        "spurious": spurious,
        "counterfactual": preference_pairs(64, 0.1, rng, "cf"),
    }


SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def trained() -> list[dict[str, RewardModel | list[PairRow]]]:
    """One standard and one CROME RM per seed: the claims hold on the mean over seeds, since
    one seed's trajectory is not stable across CPUs (seed 0 alone gave causal 0.94 here and
    0.69 on another machine's CPU)."""
    return [train_both(steps=300, seed=seed) for seed in SEEDS]


def mean(metric, models: list, probe_rows: list) -> float:
    return sum(float(metric(m, probe_rows)) for m in models) / len(models)


def test_the_planted_augmentations_differ_only_along_the_rubric(trained):
    for r in (r for t in trained for r in t["kept"]):
        same_preamble = r.chosen.startswith(PREAMBLE) == r.rejected.startswith(PREAMBLE)
        if r.label == "preference":  # causal: relevance flips, decoration stays
            assert same_preamble and topic_of(r.chosen) != topic_of(r.rejected)
            assert topic_of(r.chosen) == prompt_topic(r.prompt)
        elif r.provenance == "neutral-causal-aligned":  # relevance stays, decoration flips
            assert not same_preamble and topic_of(r.chosen) == topic_of(r.rejected)


def test_crome_ranks_the_causal_attribute(trained):
    p = probes()
    crome, standard = [t["crome"] for t in trained], [t["standard"] for t in trained]
    # sensitivity along the causal rubric: relevant > irrelevant at equal decoration
    causal_crome = mean(signed_preference, crome, p["causal"])
    assert causal_crome >= 0.9
    assert causal_crome >= mean(signed_preference, standard, p["causal"]) + 0.2
    # and robustness: the correlation flipped at test time
    cf = lambda m, rows: pairwise_accuracy(m, rows)["cf"]  # noqa: E731
    assert mean(cf, crome, p["counterfactual"]) >= 0.85
    assert mean(cf, standard, p["counterfactual"]) <= 0.3


def test_crome_is_invariant_to_the_spurious_attribute_without_collapsing(trained):
    p = probes()
    crome, standard = [t["crome"] for t in trained], [t["standard"] for t in trained]
    spur_crome = mean(sensitivity, crome, p["spurious"])
    assert spur_crome < 0.1 * mean(sensitivity, standard, p["spurious"])
    # the tie loss is satisfied by constant rewards; the causal margin must stay large instead
    assert mean(sensitivity, crome, p["causal"]) > 5 * spur_crome
