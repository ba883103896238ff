"""Sample-quality scorers trained here, on the same data: a tiny char-level GPT (generative
perplexity) and a small digit classifier (Frechet distance in its features), plus unigram entropy.

The paper scores OWT samples with GPT-2 Large and ImageNet samples with FID (Inception features);
at this scale both are replaced by models of the same kind trained on the same corpus.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "CharGPT",
    "DigitClassifier",
    "ar_loss",
    "generative_perplexity",
    "train_classifier",
]


class CharGPT(nn.Module):
    """A small causal transformer ``p(x_l | BOS, x_<l)`` (pre-norm, learned positions).

    Input id `vocab_size` is BOS; logits (batch, L, vocab_size) predict ``x`` itself.
    """

    def __init__(
        self, vocab_size: int, seq_len: int, d_model: int = 64, n_heads: int = 4, n_layers: int = 2
    ) -> None:
        super().__init__()
        self.vocab_size, self.seq_len = vocab_size, seq_len
        self.embed = nn.Embedding(vocab_size + 1, d_model)
        self.pos = nn.Parameter(torch.randn(seq_len, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(
            d_model,
            n_heads,
            4 * d_model,
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        self.register_buffer(
            "causal", nn.Transformer.generate_square_subsequent_mask(seq_len), persistent=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 2 or x.shape[1] != self.seq_len:
            raise ValueError(f"x: expected shape (batch, {self.seq_len}), got {tuple(x.shape)}")
        bos = torch.full((x.shape[0], 1), self.vocab_size, dtype=x.dtype, device=x.device)
        inp = torch.cat([bos, x[:, :-1]], dim=1)
        h = self.blocks(self.embed(inp) + self.pos, mask=self.causal, is_causal=True)
        return self.head(self.norm(h))


def ar_loss(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy (nats per token) of `model` on x (batch, L)."""
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), x.reshape(-1))


@torch.no_grad()
def generative_perplexity(scorer: CharGPT, samples: torch.Tensor, batch_size: int = 256) -> float:
    """``exp(mean NLL per token)`` of `samples` (batch, L) under the autoregressive `scorer`."""
    total, count = 0.0, 0
    for s in range(0, samples.shape[0], batch_size):
        xb = samples[s : s + batch_size]
        total += float(ar_loss(scorer, xb)) * xb.numel()
        count += xb.numel()
    return math.exp(total / count)


class DigitClassifier(nn.Module):
    """MLP on a quantised 8x8 digit (64 tokens in [0, levels)); `features` is the last hidden layer."""

    def __init__(
        self, levels: int, n_pixels: int = 64, hidden: int = 128, d_feat: int = 64
    ) -> None:
        super().__init__()
        self.levels = levels
        self.body = nn.Sequential(
            nn.Linear(n_pixels, hidden), nn.ReLU(), nn.Linear(hidden, d_feat), nn.ReLU()
        )
        self.out = nn.Linear(d_feat, 10)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x.float() / (self.levels - 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.features(x))


def train_classifier(
    x: torch.Tensor, y: torch.Tensor, levels: int, steps: int = 400, seed: int = 0
) -> DigitClassifier:
    """Full-batch AdamW (`shared_core.train.fit`, constant lr 3e-3, weight decay 1e-4 on the
    matrices) on (x (n, 64) tokens, y (n,) labels); returns the classifier in eval mode."""
    from shared_core.train import TrainConfig, fit

    torch.manual_seed(seed)
    clf = DigitClassifier(levels)
    cfg = TrainConfig(steps=steps, lr=3e-3, schedule="constant", weight_decay=1e-4,
                      betas=(0.9, 0.999), grad_clip=0.0)  # fmt: skip
    fit(
        clf, lambda m, b: F.cross_entropy(m(b[0]), b[1]), lambda step: (x, y), cfg,
        desc="digit classifier train", device=str(x.device), show_progress=False,
    )  # fmt: skip
    return clf.eval()
