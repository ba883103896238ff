"""The planted-preference world: what is preference-driven is known by construction."""

from __future__ import annotations

import pytest
from nextquill.world import PLAYS, SLOTS, TEMPLATES, WorldConfig, make_world


def test_every_template_holds_every_slot_once():
    for t in TEMPLATES:
        assert sorted(w[1:-1] for w in t.split() if w.startswith("{") and w != "{item}") == sorted(
            SLOTS
        )


def test_preference_tokens_are_slot_words_of_the_users_map(world):
    synonyms = {s for syn in SLOTS.values() for s in syn}
    for e in world.train + world.test:
        assert len(e.words) == len(e.slot_mask) == len(e.preference_mask)
        assert e.example.target.split() == list(e.words)
        for w, s, p in zip(e.words, e.slot_mask, e.preference_mask, strict=True):
            assert s == (w in synonyms)
            assert not p or s
        if not e.example.history:
            assert not any(e.preference_mask)


def test_noise_free_users_always_use_their_map_and_history_reveals_it():
    w = make_world(WorldConfig(users=5, test_users=2, noise=0.0, p_new_user=0.0), seed=1)
    for e in w.train:
        slots = [x for x, s in zip(e.words, e.slot_mask, strict=True) if s]
        assert all(x in e.example.history.split() for x in slots)
        assert e.preference_mask == e.slot_mask


def test_test_users_review_held_out_plays_and_seeds_reproduce():
    cfg = WorldConfig(users=10, test_users=4, test_items=5)
    w = make_world(cfg, seed=3)
    held = set(PLAYS[:5])
    assert all(e.example.prefix.split()[2] in held for e in w.test)
    assert all(e.example.prefix.split()[2] not in held for e in w.train)
    assert make_world(cfg, seed=3).train == w.train
    assert make_world(cfg, seed=4).train != w.train


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("users", 0, "users: expected a positive int"),
        ("reviews_per_user", 1, "reviews_per_user: expected >= 2"),
        ("noise", 1.0, r"noise: expected a probability in \[0, 1\)"),
        ("p_new_user", -0.1, "p_new_user: expected a probability"),
        ("test_items", 0, "test_items: expected 1.."),
    ],
)
def test_bad_world_config_raises(field, value, match):
    with pytest.raises(ValueError, match=match):
        make_world(WorldConfig(**{field: value}))


def test_review_files_split_one_user_and_read_back_as_the_world(tmp_path):
    from nextquill.verbs import read_examples
    from nextquill.world import write_review_files

    cfg = WorldConfig(users=4, test_users=1, reviews_per_user=7)
    files = write_review_files(tmp_path, cfg, seed=3, user=2, held_out=2)
    world = make_world(cfg, seed=3)
    mine = [e.example for e in world.train if e.user == 2]
    read = {name: read_examples(path)[0] for name, path in files.items()}
    # prefix + history + prompt + completion is the world's text, spaced as one string
    as_text = [" ".join([e.prefix, e.history, e.suffix, e.target]).split() for e in mine]
    assert [(e.prefix + e.history + e.suffix + e.target).split() for e in read["user"]] == (
        as_text[:-2]
    )
    assert [(e.prefix + e.history + e.suffix + e.target).split() for e in read["heldout"]] == (
        as_text[-2:]
    )
    assert len(read["all_users"]) == len(world.train) - 2
    assert not any(e in read["all_users"] for e in read["heldout"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"user": 4}, "user: expected a training user 0..3"), ({"held_out": 6}, "held_out")],
)
def test_review_files_refuse_a_user_or_split_that_does_not_exist(tmp_path, kwargs, match):
    from nextquill.world import write_review_files

    with pytest.raises(ValueError, match=match):
        write_review_files(
            tmp_path, WorldConfig(users=4, test_users=1, reviews_per_user=7), **kwargs
        )
    assert not list(tmp_path.iterdir())
