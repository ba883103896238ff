"""Tiny randomly initialised `transformers` causal LMs for the tests and the reproduction.

CDT needs nothing from the model but ``get_input_embeddings()`` and a forward that takes
``inputs_embeds``, so any Hugging Face causal LM works; these two are the smallest real ones:
`tiny_llama` is `shared_core.models.tiny_llama`, `tiny_gpt2` a GPT-2 of the same size.
"""

from __future__ import annotations

from typing import Any

import torch

from shared_core.models import tiny_llama

__all__ = ["tiny_gpt2", "tiny_llama"]


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
