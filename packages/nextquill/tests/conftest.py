"""Fixtures: a small planted world, its in-memory word tokenizer and a tiny random Llama."""

from __future__ import annotations

import pytest

# shared-core's plugin (fixture `device`, markers `cuda` and `slow`): `pytest tests` works on an
# installed wheel too, with or without `-p shared_core.pytest_plugin`
pytest_plugins = ["shared_core.pytest_plugin"]

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="session")
def world():
    from nextquill.world import WorldConfig, make_world

    return make_world(WorldConfig(users=12, test_users=4, reviews_per_user=3), seed=0)


@pytest.fixture(scope="session")
def tok(world):
    from nextquill.model import word_tokenizer

    return word_tokenizer(world.vocabulary)


@pytest.fixture
def model64(tok):
    """A tiny random LlamaForCausalLM in float64 (the oracle comparisons' precision)."""
    from nextquill.model import TinyLlamaConfig, tiny_llama

    return tiny_llama(len(tok), TinyLlamaConfig(hidden=32, layers=2, ff=64), seed=0).double()


@pytest.fixture
def examples(world):
    """Six training examples: with history, of different lengths, some without history."""
    from nextquill.data import Example

    picked = [e.example for e in world.train[:5]]
    return [*picked, Example(picked[0].prefix, "", picked[0].suffix, picked[0].target)]
