"""Multi-query associative recall (Zoology MQAR) at increasing numbers of key-value pairs."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from mesa_layer.data import multiquery_ar
from mesa_layer.experiments.common import METHODS, lm_loss, model_config
from mesa_layer.torch.model import MesaNetLM
from mesa_layer.train import TrainConfig, train


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
    forget_bias_init: float = 3.0
    methods: tuple[str, ...] = METHODS
    train: TrainConfig = field(default_factory=lambda: TrainConfig(steps=120, lr=3e-3, warmup=10))


def accuracy(model: MesaNetLM, inputs: torch.Tensor, labels: torch.Tensor) -> float:
    """Exact-match accuracy over the query positions (label != -100)."""
    with torch.no_grad():
        pred = model(inputs)[0].argmax(-1)
    mask = labels != -100
    return float((pred[mask] == labels[mask]).float().mean())


def run(cfg: MQARConfig, seed: int = 0, device: str | torch.device = "cpu") -> dict:
    """Accuracy of each method at each number of KV pairs."""
    results: dict = {"accuracy": {m: [] for m in cfg.methods}, "kv_pairs": list(cfg.kv_pairs)}
    for n_kv in cfg.kv_pairs:
        x_tr, y_tr = (
            torch.from_numpy(a).to(device)
            for a in multiquery_ar(cfg.vocab_size, cfg.train_examples, cfg.seq_len, n_kv, seed)
        )
        x_te, y_te = (
            torch.from_numpy(a).to(device)
            for a in multiquery_ar(cfg.vocab_size, cfg.test_examples, cfg.seq_len, n_kv, seed + 1)
        )

        def batch_fn(step: int, x_tr=x_tr, y_tr=y_tr, n_kv=n_kv):
            idx = torch.from_numpy(
                np.random.default_rng([seed, n_kv, step]).integers(0, len(x_tr), cfg.batch_size)
            ).to(x_tr.device)
            return x_tr[idx], y_tr[idx]

        for method in cfg.methods:
            torch.manual_seed(seed)
            mcfg = model_config(
                method, cfg, vocab_size=cfg.vocab_size, forget_bias_init=cfg.forget_bias_init
            )
            model = MesaNetLM(mcfg).to(device)
            train(model, batch_fn, lm_loss, cfg.train, desc=f"mqar/{n_kv}kv/{method}")
            results["accuracy"][method].append(accuracy(model, x_te, y_te))
    return results
