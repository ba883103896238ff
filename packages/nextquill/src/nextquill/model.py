"""Models and tokenizers for the experiments: a tiny random Llama and a word-level tokenizer built
in memory (no hub; both `shared_core.models`), SmolLM2-135M-Instruct with LoRA (offline), and
greedy decoding."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from shared_core.models import tiny_llama as shared_tiny_llama
from shared_core.models import word_tokenizer

__all__ = ["TinyLlamaConfig", "greedy_decode", "smollm2_lora", "tiny_llama", "word_tokenizer"]

# `word_tokenizer`'s default specials are ids 0-3, <pad> <unk> <s> </s>
_N_SPECIALS = 4
_IDS = {"pad_id": 0, "bos_id": 2, "eos_id": 3}


@dataclass(frozen=True)
class TinyLlamaConfig:
    """A small `LlamaForCausalLM` (random initialisation) for the planted task and the tests."""

    hidden: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    ff: int = 128  # MLP width
    max_positions: int = 512


def tiny_llama(vocab_size: int, config: TinyLlamaConfig | None = None, seed: int = 0) -> Any:
    """A randomly initialised `transformers.LlamaForCausalLM` (`shared_core.models.tiny_llama`:
    untied embeddings) sized by `config`, with the special ids of `word_tokenizer`: pad 0,
    bos 2 (``<s>``), eos 3 (``</s>``)."""
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < _N_SPECIALS:
        raise ValueError(
            f"vocab_size: expected an int >= {_N_SPECIALS} (the tokenizer's specials), "
            f"got {vocab_size!r}"
        )
    c = config or TinyLlamaConfig()
    return shared_tiny_llama(
        vocab_size,
        hidden_size=c.hidden,
        num_layers=c.layers,
        num_heads=c.heads,
        num_kv_heads=c.kv_heads,
        intermediate_size=c.ff,
        max_positions=c.max_positions,
        seed=seed,
        **_IDS,
    )


def smollm2_lora(rank: int = 8, alpha: int = 16, dropout: float = 0.0) -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct (offline, `shared_core.models`) with LoRA on the attention
    projections; returns ``(peft model, tokenizer)``. Needs the ``llm`` extra."""
    from shared_core.data import require_extra

    require_extra("nextquill", "llm", "peft", "SmolLM2 with LoRA")
    from peft import LoraConfig, get_peft_model

    from shared_core.models import load_model, load_tokenizer

    tok = load_tokenizer("smollm2-135m-instruct")
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    base = load_model("smollm2-135m-instruct")
    base.config.use_cache = False
    lora = LoraConfig(
        r=rank,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        task_type="CAUSAL_LM",
    )
    return get_peft_model(base, lora), tok


def greedy_decode(
    model: Any,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    eos_id: int,
    pad_id: int = 0,
) -> list[list[int]]:
    """Greedy continuations of `prompts` (token ids), stopped at `eos_id` (not included).

    Prompts are left-padded into one batch; positions count from each row's first token.
    """
    from nextquill.loss import forward_logits

    length = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), length), pad_id, dtype=torch.int64)
    mask = torch.zeros_like(ids)
    for i, p in enumerate(prompts):
        ids[i, length - len(p) :] = torch.tensor(list(p))
        mask[i, length - len(p) :] = 1
    device = next(model.parameters()).device
    ids, mask = ids.to(device), mask.to(device)
    out: list[list[int]] = [[] for _ in prompts]
    done = torch.zeros(len(prompts), dtype=torch.bool, device=device)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for _ in range(max_new_tokens):
            nxt = forward_logits(model, ids, mask)[:, -1].argmax(-1)
            for i in range(len(prompts)):
                if not done[i]:
                    if int(nxt[i]) == eos_id:
                        done[i] = True
                    else:
                        out[i].append(int(nxt[i]))
            if bool(done.all()):
                break
            ids = torch.cat([ids, nxt[:, None]], 1)
            mask = torch.cat([mask, torch.ones_like(nxt[:, None])], 1)
    model.train(was_training)
    return out
