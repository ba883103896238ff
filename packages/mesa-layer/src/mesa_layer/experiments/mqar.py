"""Multi-query associative recall (Zoology MQAR) at increasing numbers of key-value pairs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from mesa_layer.data import multiquery_ar
from mesa_layer.experiments.common import METHODS, lm_loss, model_config, train_config
from mesa_layer.torch.model import MesaNetLM
from shared_core.distributed import init_distributed
from shared_core.train import TrainConfig, fit


@dataclass
class MQARConfig:
    vocab_size: int = 128
    seq_len: int = 64
    kv_pairs: tuple[int, ...] = (4, 8)
    train_examples: int = 8192
    test_examples: int = 256
    batch_size: int = 32
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    intermediate_size: int = 128
    cg_steps_train: int = 8
    forget_bias_init: float = 3.0  # gamma ~ 0.95 at init: recall needs a long memory
    methods: tuple[str, ...] = METHODS
    train: TrainConfig = field(default_factory=lambda: train_config(120, warmup=10))


def accuracy(model: MesaNetLM, inputs: torch.Tensor, labels: torch.Tensor) -> float:
    """Exact-match accuracy over the query positions (label != -100)."""
    with torch.no_grad():
        pred = model(inputs)[0].argmax(-1)
    mask = labels != -100
    return float((pred[mask] == labels[mask]).float().mean())


def run(cfg: MQARConfig, seed: int = 0, device: str = "cpu") -> dict[str, Any]:
    """Accuracy of each method at each number of KV pairs."""
    info = init_distributed(device)
    accs: dict[str, list[float]] = {m: [] for m in cfg.methods}
    for n_kv in cfg.kv_pairs:
        x_tr, y_tr = (
            torch.from_numpy(a)
            for a in multiquery_ar(cfg.vocab_size, cfg.train_examples, cfg.seq_len, n_kv, seed)
        )
        x_te, y_te = (
            torch.from_numpy(a).to(info.device)
            for a in multiquery_ar(cfg.vocab_size, cfg.test_examples, cfg.seq_len, n_kv, seed + 1)
        )

        def batch_fn(
            step: int, x_tr: torch.Tensor = x_tr, y_tr: torch.Tensor = y_tr, n_kv: int = n_kv
        ) -> tuple[torch.Tensor, torch.Tensor]:
            rng = np.random.default_rng([seed, n_kv, step])
            idx = torch.from_numpy(rng.integers(0, len(x_tr), cfg.batch_size))
            return x_tr[idx], y_tr[idx]

        for method in cfg.methods:
            torch.manual_seed(seed)
            mcfg = model_config(
                method, cfg, vocab_size=cfg.vocab_size, forget_bias_init=cfg.forget_bias_init
            )
            model = MesaNetLM(mcfg)
            fit(
                model, lm_loss, batch_fn, cfg.train, desc=f"{method} mqar {n_kv}kv train", info=info
            )
            accs[method].append(accuracy(model, x_te, y_te))
    return {"accuracy": accs, "kv_pairs": list(cfg.kv_pairs)}
