"""A small causal LM whose sequence mixer is FEM or its base read (the same front end for all).

Pre-norm blocks ``x + mixer(LN(x))``, ``x + MLP(LN(x))`` (GELU, width ``mlp_ratio * d_model``),
a token embedding tied to the output head, a final LayerNorm. Positions come from RoPE inside
the mixer. The six mixers of the comparison are `MIXERS`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from free_energy_mixer._checks import check_positive
from free_energy_mixer.layer import BaseAttention, FEMAttention, FEMCache, FEMConfig

MIXERS = ("softmax", "fem-softmax", "linear", "fem-linear", "gla", "fem-gla")


@dataclass
class LMConfig:
    """The LM; the mixer fields are passed to `FEMConfig`."""

    vocab_size: int
    mixer: str = "fem-softmax"  # one of MIXERS
    d_model: int = 64
    num_layers: int = 2
    num_heads: int = 4
    mlp_ratio: int = 4
    tdc_hidden: int = 16  # TDC rank (public default 64; small models get a small one)
    use_tdc: bool = True

    def __post_init__(self) -> None:
        check_positive("vocab_size", self.vocab_size, integer=True)
        if self.mixer not in MIXERS:
            raise ValueError(f"mixer: expected one of {MIXERS}, got {self.mixer!r}")
        for name in ("d_model", "num_layers", "num_heads", "mlp_ratio", "tdc_hidden"):
            check_positive(name, getattr(self, name), integer=True)

    def mixer_config(self) -> FEMConfig:
        return FEMConfig(
            d_model=self.d_model,
            num_heads=self.num_heads,
            prior=self.mixer.removeprefix("fem-"),
            use_tdc=self.use_tdc,
            tdc_hidden=self.tdc_hidden,
        )


def make_mixer(mixer: str, config: FEMConfig) -> FEMAttention | BaseAttention:
    """``"fem-<prior>"`` -> `FEMAttention`, ``"<prior>"`` -> `BaseAttention`."""
    if mixer not in MIXERS:
        raise ValueError(f"mixer: expected one of {MIXERS}, got {mixer!r}")
    return FEMAttention(config) if mixer.startswith("fem-") else BaseAttention(config)


class Block(nn.Module):
    def __init__(self, cfg: LMConfig) -> None:
        super().__init__()
        D = cfg.d_model
        self.norm1 = nn.LayerNorm(D)
        self.mixer = make_mixer(cfg.mixer, cfg.mixer_config())
        self.norm2 = nn.LayerNorm(D)
        self.mlp = nn.Sequential(
            nn.Linear(D, cfg.mlp_ratio * D), nn.GELU(), nn.Linear(cfg.mlp_ratio * D, D)
        )

    def forward(self, x: torch.Tensor, cache: FEMCache | None = None) -> torch.Tensor:
        x = x + self.mixer(self.norm1(x), cache)
        return x + self.mlp(self.norm2(x))


class CausalLM(nn.Module):
    """``ids (B, T) -> logits (B, T, vocab)``, and the mean next-token loss when `labels` given."""

    def __init__(self, config: LMConfig) -> None:
        super().__init__()
        if not isinstance(config, LMConfig):
            raise TypeError(f"config: expected an LMConfig, got {type(config).__name__}")
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.num_layers))
        self.norm = nn.LayerNorm(config.d_model)

    def features(self, ids: torch.Tensor, caches: list[FEMCache] | None = None) -> torch.Tensor:
        """The final-norm features ``(B, T, d_model)`` of ``ids (B, T)``; `caches` (one
        `FEMCache` per layer, updated in place) continue a decoding."""
        V = self.config.vocab_size
        if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long or ids.ndim != 2:
            raise TypeError(f"ids: expected a (batch, time) int64 tensor, got {ids!r:.80}")
        if ids.numel() == 0:
            raise ValueError(
                f"ids: expected a non-empty (batch, time) tensor, got {tuple(ids.shape)}"
            )
        if int(ids.min()) < 0 or int(ids.max()) >= V:
            raise ValueError(
                f"ids: expected token ids in [0, {V}), got range [{int(ids.min())}, {int(ids.max())}]"
            )
        if caches is not None and len(caches) != len(self.blocks):
            raise ValueError(f"caches: expected {len(self.blocks)} FEMCache, got {len(caches)}")
        x = self.embed(ids)
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i])
        return self.norm(x)

    def forward(
        self,
        ids: torch.Tensor,
        labels: torch.Tensor | None = None,
        caches: list[FEMCache] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits and (with `labels`, ``-100`` ignored) the cross-entropy; `caches` (one
        `FEMCache` per layer) continue a decoding."""
        V = self.config.vocab_size
        logits = self.features(ids, caches) @ self.embed.weight.T
        if labels is None:
            return logits, None
        if labels.shape != ids.shape:
            raise ValueError(
                f"labels: expected shape {tuple(ids.shape)}, got {tuple(labels.shape)}"
            )
        loss = F.cross_entropy(logits.reshape(-1, V).float(), labels.reshape(-1), ignore_index=-100)
        return logits, loss
