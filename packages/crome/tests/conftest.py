"""Shared fixtures: a tiny random BERT reward model and a tiny random Llama, built offline."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from crome import world as W
from crome.model import RewardModel

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# the test models are tiny: one thread avoids oversubscribing the shared CPU cores
torch.set_num_threads(1)


def world_words() -> list[str]:
    texts = [
        W.PREAMBLE,
        *W.FILLERS,
        "The answer is",
        "Answer:",
        "What is",
        "good bad fine great poor",
    ]
    words = {w.lower() for t in texts for w in re.findall(r"\w+|[^\w\s]", t)}
    words |= {str(i) for i in range(30)} | set("+-?.!:,")
    return sorted(words)


def bert_tokenizer(tmp: Path | None = None):
    from transformers import BertTokenizerFast

    vocab = {w: i for i, w in enumerate(SPECIAL + world_words())}
    return BertTokenizerFast(vocab=vocab, do_lower_case=True)


def tiny_bert_reward_model(tmp: Path, seed: int = 0, max_length: int = 48) -> RewardModel:
    from transformers import BertConfig, BertModel

    tok = bert_tokenizer(tmp)
    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    model = RewardModel(BertModel(cfg), tok, max_length=max_length)
    # a random head, so rewards are not all zero in the scoring tests
    torch.nn.init.normal_(model.head.weight, std=0.5)
    return model


@pytest.fixture
def tiny_rm(tmp_path: Path) -> RewardModel:
    return tiny_bert_reward_model(tmp_path)


@pytest.fixture
def tiny_rm_factory(tmp_path: Path):
    def make(seed: int = 0) -> RewardModel:
        return tiny_bert_reward_model(tmp_path, seed)

    return make


def tiny_llama_backend():
    """A 2-layer random LlamaForCausalLM with a word-level tokenizer (no chat template)."""
    from crome.oracle import TransformersBackend
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = ["<unk>", "<eos>", *world_words(), "user", "assistant", "<answer>", "</answer>"]
    vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<eos>")
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        eos_token_id=vocab["<eos>"],
        pad_token_id=vocab["<eos>"],
    )
    return TransformersBackend(LlamaForCausalLM(cfg), tok, model_id="tiny-llama")
