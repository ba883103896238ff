"""Tiny randomly initialised `transformers` causal LMs for the tests and the reproduction.

CDT needs nothing from the model but ``get_input_embeddings()`` and a forward that takes
``inputs_embeds``, so any Hugging Face causal LM works; these two are the smallest real ones.
"""

from __future__ import annotations

from typing import Any

import torch


def tiny_llama(
    vocab_size: int,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    max_positions: int = 2048,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
) -> Any:
    """A `LlamaForCausalLM` with d = `hidden_size`, `num_layers` layers, untied embeddings."""
    from transformers import LlamaConfig, LlamaForCausalLM

    for name, v in (
        ("vocab_size", vocab_size),
        ("hidden_size", hidden_size),
        ("num_layers", num_layers),
        ("num_heads", num_heads),
    ):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name}: expected a positive int, got {v!r}")
    if hidden_size % num_heads:
        raise ValueError(
            f"num_heads: {num_heads} does not divide hidden_size {hidden_size} (head dim must be whole)"
        )
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=4 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=False,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(seed)
    model: Any = LlamaForCausalLM(config)
    return model.to(dtype)


def tiny_gpt2(
    vocab_size: int,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    max_positions: int = 1024,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
) -> Any:
    """A `GPT2LMHeadModel` (learned positions, tied embeddings, dropout off)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    if hidden_size % num_heads:
        raise ValueError(f"num_heads: {num_heads} does not divide hidden_size {hidden_size}")
    config = GPT2Config(
        vocab_size=vocab_size,
        n_embd=hidden_size,
        n_layer=num_layers,
        n_head=num_heads,
        n_positions=max_positions,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    torch.manual_seed(seed)
    model: Any = GPT2LMHeadModel(config)
    return model.to(dtype)
