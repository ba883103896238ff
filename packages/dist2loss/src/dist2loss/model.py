"""A small causal transformer for the toy task, trained from scratch."""

from __future__ import annotations

import torch
from torch import nn


class TinyCausalLM(nn.Module):
    """Token + learned position embeddings, pre-norm causal self-attention blocks, tied head."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 64,
        layers: int = 2,
        heads: int = 4,
        ff: int = 128,
        max_len: int = 32,
    ) -> None:
        super().__init__()
        self.max_len = max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, heads, ff, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """(batch, time) int64 -> (batch, time, vocab) logits."""
        t = tokens.shape[1]
        if t > self.max_len:
            raise ValueError(f"tokens: length {t} exceeds max_len={self.max_len}")
        h = self.embed(tokens) + self.pos(torch.arange(t, device=tokens.device))
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=tokens.device)
        h = self.blocks(h, mask=mask, is_causal=True)
        return self.norm(h) @ self.embed.weight.T
