"""A planted-preference review world: users whose only personal trait is their choice of words.

Each user has a private synonym map over a few slots (how they say "good", how they describe
the pacing, ...). A review picks a template at random, names an item (one of Shakespeare's
plays) and renders each slot through the user's map; with probability `noise` a slot takes a
uniformly random synonym instead. The history block is the user's earlier reviews.

By construction only the slot tokens rendered through the user's map depend on the history:
the template, the item and the filler words do not. So the set of preference-bearing tokens is
known (`PlantedExample.preference_mask`) and the data-side detector's precision and recall can
be measured. A fraction of users have no history yet (`p_new_user`), as in real logs; it also
puts the counterfactual prompt (history removed) inside the training distribution.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nextquill.data import Example

PLAYS = (
    "hamlet", "macbeth", "othello", "lear", "tempest", "cymbeline", "coriolanus",
    "pericles", "titus", "timon", "caesar", "cleopatra", "troilus", "shrew",
    "errors", "twelfth", "winter", "dream", "merchant", "measure", "richard",
    "henry", "john", "verona",
)  # fmt: skip
"""Items: one word per play (the title without articles and numbers)."""

SLOTS = {
    "praise": ("superb", "splendid", "marvellous", "brilliant"),
    "pace": ("brisk", "leisurely", "steady", "swift"),
    "mood": ("moving", "stirring", "haunting", "touching"),
    "verdict": ("recommend", "endorse", "applaud", "cherish"),
}
"""Slot -> its synonyms; each user prefers one synonym per slot. The synonym sets are disjoint
and appear nowhere else, so a slot word always marks its slot."""

TEMPLATES = (
    "{item} is {praise} , the pacing is {pace} and the ending is {mood} so i {verdict} it",
    "i found {item} {praise} and {mood} ; the plot felt {pace} and i {verdict} it",
    "a {mood} night : {item} was {praise} with {pace} scenes , i {verdict} it",
    "the cast made {item} {mood} and {praise} , though {pace} , and i {verdict} it",
)
"""Every template holds every slot once, so any earlier review reveals the whole map."""


@dataclass(frozen=True)
class WorldConfig:
    """The generated task; defaults are the tiny scale's."""

    users: int = 200  # training users
    test_users: int = 40  # held-out users (new histories, held-out items)
    reviews_per_user: int = 5  # each review after the first is one example with history
    max_history: int = 3  # newest earlier reviews in the prompt
    noise: float = 0.1  # probability a slot ignores the user's map
    p_new_user: float = 0.2  # fraction of examples shown without any history
    test_items: int = 6  # plays only the test users review


@dataclass(frozen=True)
class PlantedExample:
    """An `Example` with its planted truth over the target's words (one token per word)."""

    example: Example
    user: int
    words: tuple[str, ...]  # the target's words
    slot_mask: tuple[bool, ...]  # the word fills a slot
    preference_mask: tuple[bool, ...]  # ... through the user's map and with history shown


@dataclass
class World:
    """The generated data: train/test `PlantedExample`s and the vocabulary."""

    config: WorldConfig
    train: list[PlantedExample] = field(default_factory=list)
    test: list[PlantedExample] = field(default_factory=list)

    @property
    def vocabulary(self) -> list[str]:
        """Every word of every prompt and response (for `nextquill.model.word_tokenizer`)."""
        words = {"item", ":", "history", "|", ";", "review"}
        words |= set(PLAYS) | {s for syn in SLOTS.values() for s in syn}
        for t in TEMPLATES:
            words |= {w for w in t.split() if not w.startswith("{")}
        return sorted(words)


def _review(
    rng: np.random.Generator, item: str, prefs: dict[str, int], noise: float
) -> tuple[list[str], list[bool], list[bool]]:
    template = TEMPLATES[rng.integers(len(TEMPLATES))]
    words, slot, pref = [], [], []
    for w in template.split():
        if w == "{item}":
            words.append(item)
            slot.append(False)
            pref.append(False)
        elif w.startswith("{"):
            name = w[1:-1]
            by_map = rng.random() >= noise
            k = prefs[name] if by_map else int(rng.integers(len(SLOTS[name])))
            words.append(SLOTS[name][k])
            slot.append(True)
            pref.append(by_map)
        else:
            words.append(w)
            slot.append(False)
            pref.append(False)
    return words, slot, pref


def _user_examples(
    rng: np.random.Generator, user: int, items: list[str], cfg: WorldConfig
) -> list[PlantedExample]:
    prefs = {name: int(rng.integers(len(syn))) for name, syn in SLOTS.items()}
    # A user's first review is only ever history; its item may be any play, so the held-out
    # plays' tokens are seen in training (as context, never as a training target's item).
    reviews = [
        _review(rng, str(rng.choice(list(PLAYS) if k == 0 else items)), prefs, cfg.noise)
        for k in range(cfg.reviews_per_user)
    ]
    out = []
    for k in range(1, len(reviews)):
        words, slot, pref = reviews[k]
        item = next(w for w, s in zip(words, slot, strict=True) if w in PLAYS and not s)
        shown = rng.random() >= cfg.p_new_user
        past = reviews[max(0, k - cfg.max_history) : k] if shown else []
        history = "history : " + " | ".join(" ".join(r[0]) for r in past) + " ; " if past else ""
        example = Example(f"item : {item} ;", history.strip(), "review :", " ".join(words))
        out.append(
            PlantedExample(
                example,
                user,
                tuple(words),
                tuple(slot),
                tuple(p and bool(past) for p in pref),
            )
        )
    return out


def make_world(config: WorldConfig | None = None, seed: int = 0) -> World:
    """Generate the train and test users (test users review only held-out plays)."""
    cfg = config or WorldConfig()
    for name in ("users", "test_users", "reviews_per_user", "max_history"):
        v = getattr(cfg, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name}: expected a positive int, got {v!r}")
    if cfg.reviews_per_user < 2:
        raise ValueError(
            f"reviews_per_user: expected >= 2 (one earlier review at least), got {cfg.reviews_per_user}"
        )
    for name in ("noise", "p_new_user"):
        v = getattr(cfg, name)
        if not 0.0 <= v < 1.0:
            raise ValueError(f"{name}: expected a probability in [0, 1), got {v!r}")
    if not 0 < cfg.test_items < len(PLAYS):
        raise ValueError(f"test_items: expected 1..{len(PLAYS) - 1}, got {cfg.test_items!r}")
    rng = np.random.default_rng(seed)
    train_items, test_items = list(PLAYS[cfg.test_items :]), list(PLAYS[: cfg.test_items])
    world = World(cfg)
    for u in range(cfg.users):
        world.train += _user_examples(rng, u, train_items, cfg)
    for u in range(cfg.users, cfg.users + cfg.test_users):
        # held-out users review a held-out play
        ex = _user_examples(rng, u, train_items, cfg)
        world.test += [_with_item(e, str(rng.choice(test_items))) for e in ex]
    return world


def _with_item(e: PlantedExample, item: str) -> PlantedExample:
    old = e.example.prefix.split()[2]
    words = tuple(
        item if w == old and not s else w for w, s in zip(e.words, e.slot_mask, strict=True)
    )
    ex = Example(f"item : {item} ;", e.example.history, e.example.suffix, " ".join(words))
    return PlantedExample(ex, e.user, words, e.slot_mask, e.preference_mask)


def review_records(examples: Iterable[PlantedExample]) -> list[dict[str, Any]]:
    """The JSONL records the verbs read (TRL prompt/completion with the history as its own
    field, `nextquill.verbs.read_examples`): ``user``, ``prefix``, ``history``, ``prompt``,
    ``completion``, spaced so that ``prefix + history + prompt + completion`` reads as text."""
    return [
        {
            "user": e.user,
            "prefix": e.example.prefix + " ",
            "history": e.example.history + " " if e.example.history else "",
            "prompt": e.example.suffix,
            "completion": " " + e.example.target,
        }
        for e in examples
    ]


def write_review_files(
    folder: str | os.PathLike[str],
    config: WorldConfig | None = None,
    seed: int = 0,
    user: int = 0,
    held_out: int = 8,
) -> dict[str, Path]:
    """Write the planted world's reviews for ``train-reference`` / ``train`` / ``evaluate``.

    Files in `folder`: ``all_users.jsonl`` (every training user's examples but `user`'s last
    `held_out`: the data D of theta_D), ``user.jsonl`` (`user`'s other examples, in order) and
    ``heldout.jsonl`` (`user`'s last `held_out` examples). Returns ``{name: path}``.
    """
    from shared_core.data import write_jsonl

    cfg = config or WorldConfig()
    if not isinstance(user, int) or not 0 <= user < cfg.users:
        raise ValueError(f"user: expected a training user 0..{cfg.users - 1}, got {user!r}")
    per_user = cfg.reviews_per_user - 1
    if not isinstance(held_out, int) or not 0 < held_out < per_user:
        raise ValueError(
            f"held_out: expected 1..{per_user - 1} (the user has {per_user} examples), "
            f"got {held_out!r}"
        )
    world = make_world(cfg, seed)
    mine = [e for e in world.train if e.user == user]
    test = mine[-held_out:]
    kept = [e for e in world.train if not any(e is t for t in test)]
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "all_users": kept,
        "user": [e for e in kept if e.user == user],
        "heldout": test,
    }
    return {
        name: write_jsonl(out / f"{name}.jsonl", review_records(rows), format="prompt_completion")
        for name, rows in files.items()
    }
