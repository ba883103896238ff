"""TopoFormer: one Transformer encoder per Topo-Scan sequence, fused by learned weights.

Per filtration f with T_f tokens (the authors' ``TransformerClassifier`` with output d):

    h = Linear(4, d)(tokens) + P            P: a learned (T_f, d) table, initialised at 0
    h = TransformerEncoder(h)               2 post-norm layers, 2 heads, FFN 2048, dropout 0.1,
                                            final LayerNorm (``nn.Transformer(...).encoder``)
    z_f = Linear(T_f d, d)(Dropout(BN(flatten(h))))

Fusion (``DualTransformerClassifier``): z = sum_f c_f z_f with learned c_1 .. c_{K-1}
(initialised at 1/K) and c_K = 1 - sum of the others, so two branches start at alpha = 0.5
as in the paper; then BN, dropout and a linear head. An optional ECFP branch (molecules,
``DualTransformerWithMLPClassifier``) is an MLP d_in -> d + 200 -> d with BN and ReLU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class TopoFormerConfig:
    """Architecture; the defaults are the authors' graph-classification script (train_g.py):
    d 64 and dropout 0.0 where the paper's text says 32 and 0.5 (`PAPER_TEXT_CONFIG`)."""

    d_model: int = 64  # hidden_channels
    n_heads: int = 2
    n_layers: int = 2
    dim_feedforward: int = 2048  # nn.Transformer's default, which the authors kept
    attn_dropout: float = 0.1  # nn.Transformer's default inside the encoder layers
    dropout: float = 0.0  # after the BN layers (train_g.py passes 0.0)
    token_features: int = 4  # (b0, b1, |V|, |E|)

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "n_layers", "dim_feedforward", "token_features"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads: must divide d_model = {self.d_model}, got {self.n_heads}")
        for name in ("attn_dropout", "dropout"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0.0 <= v < 1.0):
                raise ValueError(f"{name}: expected a probability in [0, 1), got {v!r}")


def _check_batch(module: nn.Module, batch: int, name: str) -> None:
    """BatchNorm cannot normalise one sample in train mode: say so before it does, cryptically."""
    if module.training and batch < 2:
        raise ValueError(
            f"{name}: a batch of {batch} graph(s) in train mode; the BatchNorm layers need at "
            "least 2 graphs per training batch (use model.eval() to predict a single graph)"
        )


def _check_tokens(x: object, name: str) -> None:
    """A floating-point tensor of finite token values (Topo-Scan counts, maybe scaled)."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise TypeError(f"{name}: expected a floating-point torch.Tensor of tokens, got {got}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name}: expected finite token values, got NaN or inf")


PAPER_TEXT_CONFIG = TopoFormerConfig(d_model=32, dropout=0.5)
"""The paper's stated graph-classification setting (note, "Loss & Training": Transformer
hidden dimension 32, dropout 0.5). The default `TopoFormerConfig` follows the authors' code
instead (``train_g.py``: ``--hidden_channels 64``; its ``--dropout`` defaults to 0.5 but the
script passes 0.0 to the model), which produced the released numbers."""


class TopoSequenceEncoder(nn.Module):
    """``(batch, T, 4)`` tokens -> ``(batch, d_model)`` embedding of one filtration."""

    def __init__(self, num_tokens: int, config: TopoFormerConfig) -> None:
        super().__init__()
        if isinstance(num_tokens, bool) or not isinstance(num_tokens, int) or num_tokens < 1:
            raise ValueError(f"num_tokens: expected a positive int, got {num_tokens!r}")
        d = config.d_model
        self.num_tokens = num_tokens
        self.embedding = nn.Linear(config.token_features, d)
        self.positional = nn.Parameter(torch.zeros(1, num_tokens, d))
        layer = nn.TransformerEncoderLayer(
            d, config.n_heads, config.dim_feedforward, config.attn_dropout, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(
            layer, config.n_layers, norm=nn.LayerNorm(d), enable_nested_tensor=False
        )
        self.bn = nn.BatchNorm1d(num_tokens * d)
        self.dropout = nn.Dropout(config.dropout)
        self.fc = nn.Linear(num_tokens * d, d)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        _check_tokens(tokens, "tokens")
        if tokens.ndim != 3 or tokens.shape[1] != self.num_tokens:
            raise ValueError(
                f"tokens: expected shape (batch, {self.num_tokens}, "
                f"{self.embedding.in_features}), got {tuple(tokens.shape)}"
            )
        _check_batch(self, tokens.shape[0], "tokens")
        h = self.encoder(self.embedding(tokens) + self.positional)  # (B, T, d)
        return self.fc(self.dropout(self.bn(h.flatten(1))))  # (B, d)


class TopoFormer(nn.Module):
    """Topo-Scan sequences (one per filtration) [+ a fingerprint] -> ``(batch, num_outputs)``.

    Args:
        num_tokens: T_f of each filtration, in the order the sequences are passed.
        num_outputs: classes (logits) or regression targets.
        config: `TopoFormerConfig`.
        extra_features: width of an extra per-graph vector (ECFP) read by an MLP branch; 0: none.
    """

    def __init__(
        self,
        num_tokens: Sequence[int],
        num_outputs: int,
        config: TopoFormerConfig | None = None,
        extra_features: int = 0,
    ) -> None:
        super().__init__()
        config = config or TopoFormerConfig()
        if len(num_tokens) == 0:
            raise ValueError("num_tokens: expected at least one filtration, got none")
        if isinstance(num_outputs, bool) or not isinstance(num_outputs, int) or num_outputs < 1:
            raise ValueError(f"num_outputs: expected a positive int, got {num_outputs!r}")
        if (
            isinstance(extra_features, bool)
            or not isinstance(extra_features, int)
            or extra_features < 0
        ):
            raise ValueError(f"extra_features: expected an int >= 0, got {extra_features!r}")
        d = config.d_model
        self.encoders = nn.ModuleList(TopoSequenceEncoder(t, config) for t in num_tokens)
        self.mlp: nn.Module | None = None
        if extra_features:
            self.mlp = nn.Sequential(
                nn.Linear(extra_features, d + 200), nn.BatchNorm1d(d + 200), nn.ReLU(),
                nn.Dropout(0.5), nn.Linear(d + 200, d), nn.BatchNorm1d(d),
            )  # fmt: skip
        branches = len(num_tokens) + (1 if extra_features else 0)
        self.extra_features = extra_features
        # c_1 .. c_{K-1} learned, c_K = 1 - sum: two branches start at alpha = 0.5 (paper)
        self.mix = nn.Parameter(torch.full((branches - 1,), 1.0 / branches))
        self.bn = nn.BatchNorm1d(d)
        self.dropout = nn.Dropout(config.dropout)
        self.head = nn.Linear(d, num_outputs)

    def mixing_weights(self) -> torch.Tensor:
        """``(K,)`` the fusion weights c_f (they sum to 1; not constrained to be positive)."""
        return torch.cat([self.mix, 1.0 - self.mix.sum(0, keepdim=True)])

    def embed(
        self, sequences: Sequence[torch.Tensor], extra: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``(batch, d_model)`` fused graph embedding (before the head)."""
        if len(sequences) != len(self.encoders):
            raise ValueError(
                f"sequences: expected {len(self.encoders)} token tensors, got {len(sequences)}"
            )
        for i, x in enumerate(sequences):
            _check_tokens(x, f"sequences[{i}]")
        if len(sequences) and sequences[0].ndim >= 1:
            _check_batch(self, sequences[0].shape[0], "sequences")
        parts = [enc(x) for enc, x in zip(self.encoders, sequences, strict=True)]
        if self.mlp is not None:
            if extra is None or extra.ndim != 2 or extra.shape[1] != self.extra_features:
                got = None if extra is None else tuple(extra.shape)
                raise ValueError(f"extra: expected shape (batch, {self.extra_features}), got {got}")
            _check_tokens(extra, "extra")
            parts.append(self.mlp(extra))
        elif extra is not None:
            raise ValueError("extra: this model has no extra branch (extra_features=0)")
        c = self.mixing_weights()
        z = sum(c[k] * p for k, p in enumerate(parts))
        assert isinstance(z, torch.Tensor)
        return self.bn(z)

    def forward(
        self, sequences: Sequence[torch.Tensor], extra: torch.Tensor | None = None
    ) -> torch.Tensor:
        return self.head(self.dropout(self.embed(sequences, extra)))
