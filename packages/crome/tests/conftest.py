"""Shared fixtures: a tiny random BERT reward model and a tiny random Llama, built offline."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
import torch
from crome import world as W
from crome.model import RewardModel, random_bert

from shared_core.device import limit_threads

# shared-core's plugin (fixture `device`, markers `cuda` and `slow`): `pytest tests` works on an
# installed wheel too, with or without `-p shared_core.pytest_plugin`
pytest_plugins = ["shared_core.pytest_plugin"]

EXTRA_WORDS = ["good", "bad", "fine", "great", "poor", ",", "-", "user", "assistant"]


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> Iterator[None]:
    # the test models are tiny: one thread avoids oversubscribing the shared CPU cores
    with limit_threads(1):
        yield


def tiny_bert_reward_model(seed: int = 0, max_length: int = 48) -> RewardModel:
    model = random_bert([*W.vocabulary(), *EXTRA_WORDS], max_length=max_length, seed=seed)
    # a random head, so rewards are not all zero in the scoring tests
    torch.manual_seed(seed)
    torch.nn.init.normal_(model.head.weight, std=0.5)
    return model


@pytest.fixture
def tiny_rm() -> RewardModel:
    return tiny_bert_reward_model()


@pytest.fixture
def tiny_rm_factory() -> Callable[[int], RewardModel]:
    return tiny_bert_reward_model


@pytest.fixture
def tiny_llama_backend():
    """A 2-layer random LlamaForCausalLM with a word-level tokenizer (no chat template): the
    `shared_core.models.tiny_lm` fixture; <eos> stops generation and pads."""
    from crome.oracle import TransformersBackend

    from shared_core.models import tiny_lm

    texts = [W.PREAMBLE, *W.FILLERS, "The answer is", "Answer:", "What is"]
    words = {w.lower() for t in texts for w in re.findall(r"\w+|[^\w\s]", t)}
    words |= {str(i) for i in range(30)} | set("+-?.!:,") | {"good", "bad", "fine", "great"}
    model, tok = tiny_lm(
        [*sorted(words), "user", "assistant", "<answer>", "</answer>"],
        specials={"unk": "<unk>", "eos": "<eos>"},
        split=r"\w+|[^\w\s]+",  # what `tokenizers.pre_tokenizers.Whitespace` splits
        hidden_size=32,
        intermediate_size=64,
        num_heads=2,
        max_positions=512,
    )
    return TransformersBackend(model, tok, model_id="tiny-llama")
