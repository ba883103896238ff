"""MesaNet: pre-norm residual blocks (sequence mixer + SwiGLU MLP) and a small causal LM (Fig. 1).

    h   = x + Mixer(RMSNorm(x))
    out = h + SwiGLU(RMSNorm(h))

The mixer is the Mesa layer or, for the baselines, gated linear attention, DeltaNet or
softmax attention of the same width.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from mesa_layer.torch.baselines import DeltaNetLayer, GatedLinearAttentionLayer, SoftmaxAttention
from mesa_layer.torch.chunk import CG_STARTS
from mesa_layer.torch.fla_path import BACKENDS
from mesa_layer.torch.layer import MesaCache, MesaLayer

MIXERS = ("mesa", "gla", "deltanet", "attention")


@dataclass
class MesaNetConfig:
    """Width, depth and mixer of a `MesaNet` (defaults: the tiny scale of the reproduction)."""

    vocab_size: int = 256
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 2
    intermediate_size: int = 128
    mixer: str = "mesa"
    max_cg_steps_train: int = 30
    max_cg_steps_decode: int = 30
    cg_tol: float | None = None
    chunk_size: int = 32
    forget_bias_init: float = 0.0
    use_output_gate: bool = False
    lambda_lower_bound: float = 0.25
    norm_eps: float = 1e-6
    attention_conv_size: int = 0  # short conv on softmax attention's q/k (0: none)
    cg_start: str = "zero"  # "q": 0 CG steps read out G q (MesaLayer)
    backend: str | None = None  # "auto" / "torch" / "fla"; None: $MESA_LAYER_BACKEND

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "hidden_size",
            "num_layers",
            "num_heads",
            "intermediate_size",
            "chunk_size",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}: expected a positive int, got {value!r}")
        for name in ("max_cg_steps_train", "max_cg_steps_decode", "attention_conv_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name}: expected a non-negative int, got {value!r}")
        if self.mixer not in MIXERS:
            raise ValueError(f"mixer: expected one of {MIXERS}, got {self.mixer!r}")
        if self.cg_start not in CG_STARTS:
            raise ValueError(f"cg_start: expected one of {CG_STARTS}, got {self.cg_start!r}")
        if self.backend is not None and self.backend not in BACKENDS:
            raise ValueError(f"backend: expected one of {BACKENDS} or None, got {self.backend!r}")
        if self.cg_tol is not None and (
            isinstance(self.cg_tol, bool)
            or not isinstance(self.cg_tol, (int, float))
            or not self.cg_tol >= 0
            or self.cg_tol == float("inf")
        ):
            raise ValueError(f"cg_tol: expected a finite float >= 0 or None, got {self.cg_tol!r}")
        for name in ("lambda_lower_bound", "norm_eps", "forget_bias_init"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name}: expected a float, got {value!r}")
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError(f"{name}: expected a finite float, got {value!r}")
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"num_heads: expected a divisor of hidden_size={self.hidden_size}, got {self.num_heads}"
            )


def make_mixer(cfg: MesaNetConfig) -> nn.Module:
    if cfg.mixer == "mesa":
        return MesaLayer(
            cfg.hidden_size,
            cfg.num_heads,
            max_cg_steps_train=cfg.max_cg_steps_train,
            max_cg_steps_decode=cfg.max_cg_steps_decode,
            cg_tol=cfg.cg_tol,
            chunk_size=cfg.chunk_size,
            forget_bias_init=cfg.forget_bias_init,
            use_output_gate=cfg.use_output_gate,
            lambda_lower_bound=cfg.lambda_lower_bound,
            norm_eps=cfg.norm_eps,
            cg_start=cfg.cg_start,
            backend=cfg.backend,
        )
    if cfg.mixer == "gla":
        return GatedLinearAttentionLayer(
            cfg.hidden_size, cfg.num_heads, forget_bias_init=cfg.forget_bias_init
        )
    if cfg.mixer == "deltanet":
        return DeltaNetLayer(cfg.hidden_size, cfg.num_heads)
    return SoftmaxAttention(cfg.hidden_size, cfg.num_heads, conv_size=cfg.attention_conv_size)


class SwiGLU(nn.Module):
    """``W_down (SiLU(W_gate x) * W_up x)`` (fla ``GatedMLP`` with ``hidden_act='swish'``)."""

    def __init__(self, hidden_size: int, intermediate_size: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MesaNetBlock(nn.Module):
    """One pre-norm residual block: mixer then SwiGLU MLP."""

    def __init__(self, cfg: MesaNetConfig) -> None:
        super().__init__()
        self.mixer_norm = nn.RMSNorm(cfg.hidden_size, eps=cfg.norm_eps)
        self.mixer = make_mixer(cfg)
        self.mlp_norm = nn.RMSNorm(cfg.hidden_size, eps=cfg.norm_eps)
        self.mlp = SwiGLU(cfg.hidden_size, cfg.intermediate_size)

    def forward(self, x: torch.Tensor, cg_steps: int | None = None) -> torch.Tensor:
        h = x + self.mixer(self.mixer_norm(x), cg_steps=cg_steps)
        return h + self.mlp(self.mlp_norm(h))

    def forward_cached(
        self, x: torch.Tensor, cache: MesaCache | None, cg_steps: int | None = None
    ) -> tuple[torch.Tensor, MesaCache]:
        """`forward` continuing from `cache` (None: from the empty state); returns the new
        cache. A one-token `x` with a cache runs the Mesa layer's recurrent step form."""
        if not isinstance(self.mixer, MesaLayer):
            raise ValueError(
                f"cache: decoding with a cache needs the 'mesa' mixer, this block has "
                f"{type(self.mixer).__name__}"
            )
        mixed, cache = self.mixer(
            self.mixer_norm(x), cache=cache, use_cache=True, cg_steps=cg_steps
        )
        h = x + mixed
        return h + self.mlp(self.mlp_norm(h)), cache


class MesaNetBackbone(nn.Module):
    """A stack of `MesaNetBlock` and a final RMSNorm on ``(B, T, hidden)`` features."""

    def __init__(self, cfg: MesaNetConfig) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(MesaNetBlock(cfg) for _ in range(cfg.num_layers))
        self.norm = nn.RMSNorm(cfg.hidden_size, eps=cfg.norm_eps)

    def forward(self, h: torch.Tensor, cg_steps: int | None = None) -> torch.Tensor:
        for block in self.blocks:
            h = block(h, cg_steps=cg_steps)
        return self.norm(h)

    def forward_cached(
        self,
        h: torch.Tensor,
        caches: list[MesaCache] | None,
        cg_steps: int | None = None,
    ) -> tuple[torch.Tensor, list[MesaCache]]:
        """`forward` continuing from one `MesaCache` per block (None: the empty state);
        returns the features and the new caches."""
        if caches is not None and len(caches) != len(self.blocks):
            raise ValueError(f"caches: expected {len(self.blocks)} MesaCache, got {len(caches)}")
        new = []
        for i, block in enumerate(self.blocks):
            assert isinstance(block, MesaNetBlock)
            h, cache = block.forward_cached(h, None if caches is None else caches[i], cg_steps)
            new.append(cache)
        return self.norm(h), new


class MesaNetLM(nn.Module):
    """Token embedding, `MesaNetBackbone`, untied LM head (fla ``MesaNetForCausalLM``)."""

    def __init__(self, cfg: MesaNetConfig) -> None:
        super().__init__()
        self.config = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.backbone = MesaNetBackbone(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.apply(init_weights)

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None, cg_steps: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``idx`` ``(B, T)`` token ids -> logits ``(B, T, vocab)`` and, with aligned `targets`
        (``-100`` = ignored; no shift is applied here), the mean cross-entropy."""
        V = self.config.vocab_size
        if not isinstance(idx, torch.Tensor):
            raise TypeError(f"idx: expected a torch.Tensor of token ids, got {type(idx).__name__}")
        if idx.is_floating_point() or idx.is_complex() or idx.dtype == torch.bool:
            raise TypeError(f"idx: expected integer token ids, got dtype {idx.dtype}")
        if idx.ndim != 2:
            raise ValueError(f"idx: expected shape (batch, time), got {tuple(idx.shape)}")
        if idx.numel() == 0:
            raise ValueError(
                f"idx: expected at least one sequence and one token, got {tuple(idx.shape)}"
            )
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= V:
            raise ValueError(
                f"idx: expected token ids in [0, {V}) (vocab_size), got min {lo}, max {hi}"
            )
        if targets is not None:
            if not isinstance(targets, torch.Tensor) or targets.shape != idx.shape:
                got = (
                    tuple(targets.shape)
                    if isinstance(targets, torch.Tensor)
                    else type(targets).__name__
                )
                raise ValueError(
                    f"targets: expected the shape of idx {tuple(idx.shape)}, got {got}"
                )
            valid = targets[targets != -100]
            if targets.is_floating_point() or (
                valid.numel() and (int(valid.min()) < 0 or int(valid.max()) >= V)
            ):
                raise ValueError(
                    f"targets: expected integer ids in [0, {V}) or -100 (ignored), got dtype "
                    f"{targets.dtype}"
                    + (
                        f", range [{int(valid.min())}, {int(valid.max())}]"
                        if valid.numel() and not targets.is_floating_point()
                        else ""
                    )
                )
        logits = self.lm_head(self.backbone(self.embed(idx), cg_steps=cg_steps))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)
        return logits, loss


def init_weights(m: nn.Module, std: float = 0.02) -> None:
    """N(0, `std`) for every linear and embedding weight (fla's ``_init_weights``).

    Biases are left as the layers set them: the forget-gate bias carries `forget_bias_init`.
    """
    if isinstance(m, (nn.Linear, nn.Embedding)):
        nn.init.normal_(m.weight, std=std)
