"""Models and tokenizers for the experiments: a tiny random Llama, a word-level tokenizer built
in memory (no hub), SmolLM2-135M-Instruct with LoRA (offline), and greedy decoding."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")


def word_tokenizer(words: Sequence[str]) -> Any:
    """A `PreTrainedTokenizerFast` over `words` (split on whitespace), ids 0-3 are
    ``<pad> <unk> <s> </s>``; built in memory, so it needs no download."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(SPECIALS)}
    for w in words:
        if not isinstance(w, str) or not w or w.split() != [w]:
            raise ValueError(f"words: expected non-empty words without spaces, got {w!r}")
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )


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
    """A randomly initialised `transformers.LlamaForCausalLM` (pad id 0, untied embeddings)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 2:
        raise ValueError(f"vocab_size: expected an int >= 2, got {vocab_size!r}")
    c = config or TinyLlamaConfig()
    cfg = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=c.hidden,
        intermediate_size=c.ff,
        num_hidden_layers=c.layers,
        num_attention_heads=c.heads,
        num_key_value_heads=c.kv_heads,
        max_position_embeddings=c.max_positions,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(cfg)


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
