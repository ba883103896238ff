"""Character-level language modelling on Shakespeare; validation loss and loss vs CG steps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from mesa_layer.data import char_batch, char_corpus
from mesa_layer.experiments.common import METHODS, cg_sweep, lm_loss, model_config, train_config
from mesa_layer.torch.model import MesaNetLM
from shared_core.distributed import init_distributed
from shared_core.train import TrainConfig, fit


@dataclass
class LMConfig:
    max_chars: int = 1_000_000  # first characters of the 38 plays, split 90/10
    seq_len: int = 64
    batch_size: int = 16
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    intermediate_size: int = 128
    cg_steps_train: int = 8
    eval_batches: int = 4
    eval_batch_size: int = 32
    eval_cg_steps: tuple[int, ...] = (0, 1, 2, 4, 8, 16)
    methods: tuple[str, ...] = METHODS
    train: TrainConfig = field(default_factory=lambda: train_config(150, warmup=15))


def run(cfg: LMConfig, seed: int = 0, device: str = "cpu") -> dict[str, Any]:
    """Validation cross-entropy (nats/char) of each method, and Mesa's loss vs inference CG steps."""
    info = init_distributed(device)
    corpus = char_corpus(cfg.max_chars)
    val_rng = np.random.default_rng(seed + 20_000)
    val = [
        tuple(
            torch.from_numpy(a).to(info.device)
            for a in char_batch(corpus.val, cfg.eval_batch_size, cfg.seq_len, val_rng)
        )
        for _ in range(cfg.eval_batches)
    ]
    results: dict[str, Any] = {"val_loss": {}, "vocab_size": corpus.vocab_size}

    def batch_fn(step: int) -> tuple[torch.Tensor, ...]:
        rng = np.random.default_rng([seed, step])
        return tuple(
            torch.from_numpy(a) for a in char_batch(corpus.train, cfg.batch_size, cfg.seq_len, rng)
        )

    for method in cfg.methods:
        torch.manual_seed(seed)
        model = MesaNetLM(model_config(method, cfg, vocab_size=corpus.vocab_size))
        fit(model, lm_loss, batch_fn, cfg.train, desc=f"{method} lm train", info=info)

        def evaluate(steps: int | None, model: MesaNetLM = model) -> float:
            with torch.no_grad():
                losses = [model(x, y, cg_steps=steps)[1] for x, y in val]
                return float(np.mean([float(loss) for loss in losses if loss is not None]))

        results["val_loss"][method] = evaluate(None)
        if method == "mesa":
            results["cg_sweep"] = cg_sweep(evaluate, cfg.eval_cg_steps)
    return results
