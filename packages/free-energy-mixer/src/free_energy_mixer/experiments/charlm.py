"""Finding 2: a character LM on Shakespeare with each of the six mixers, same budget.

`CausalLM` models with the same width, depth, heads and MLP (only the mixer changes) are
trained by `shared_core.train.fit` on the same random windows; the result is the validation
loss in bits per character on fixed held-out windows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from free_energy_mixer.data import char_corpus, char_windows
from free_energy_mixer.experiments.common import count_parameters, train_config
from free_energy_mixer.model import MIXERS, CausalLM, LMConfig
from shared_core.train import TrainConfig, fit, step_generator


@dataclass
class CharLMConfig:
    """The char-LM comparison."""

    mixers: tuple[str, ...] = MIXERS
    max_chars: int = 300_000
    T: int = 64
    batch_size: int = 16
    d_model: int = 64
    num_layers: int = 2
    num_heads: int = 4
    tdc_hidden: int = 8
    eval_batches: int = 8
    eval_batch_size: int = 32
    train: TrainConfig = field(default_factory=lambda: train_config(200))


def _loss(model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    loss = model(batch[0], batch[1])[1]
    assert loss is not None
    return loss


def run(cfg: CharLMConfig, seed: int = 0, device: str = "cpu") -> dict[str, Any]:
    """Train each mixer; return validation bits per character and parameter counts."""
    corpus = char_corpus(cfg.max_chars)
    bpc: dict[str, float] = {}
    params: dict[str, int] = {}
    train_bpc: dict[str, float] = {}
    for mixer in cfg.mixers:
        torch.manual_seed(seed)
        model = CausalLM(LMConfig(
            vocab_size=corpus.vocab_size, mixer=mixer, d_model=cfg.d_model,
            num_layers=cfg.num_layers, num_heads=cfg.num_heads, tdc_hidden=cfg.tdc_hidden,
        ))  # fmt: skip

        def batch_fn(step: int) -> tuple[torch.Tensor, torch.Tensor]:
            return char_windows(corpus.train, cfg.batch_size, cfg.T, step_generator(seed, step))

        result = fit(model, _loss, batch_fn, cfg.train, device=device, desc=f"charlm {mixer} train")
        tail = result.losses[-max(1, len(result.losses) // 10) :]
        train_bpc[mixer] = sum(tail) / len(tail) / math.log(2)
        total = 0.0
        with torch.no_grad():
            for i in range(cfg.eval_batches):
                x, y = char_windows(corpus.val, cfg.eval_batch_size, cfg.T,
                                    step_generator(seed + 104729, i))  # fmt: skip
                loss = model(x.to(device), y.to(device))[1]
                assert loss is not None
                total += float(loss)
        bpc[mixer] = total / cfg.eval_batches / math.log(2)
        params[mixer] = count_parameters(model)
    return {"val_bpc": bpc, "train_bpc_last10pct": train_bpc, "params": params}
