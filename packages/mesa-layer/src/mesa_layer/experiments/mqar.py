"""Multi-query associative recall (Zoology MQAR): accuracy against the number of key-value
pairs for every mixer, and MesaNet's accuracy against inference-time CG steps.

As in Zoology, each model is trained once on a mixture of pair counts (every training
sequence draws its count uniformly from `kv_pairs`) and then evaluated at each count
separately; the loss and the accuracy count the query positions only (label != -100).
The CG sweep re-evaluates the one trained MesaNet with other step counts: no retraining.
"""

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
    kv_pairs: tuple[int, ...] = (2, 4, 8, 16)  # trained as a mixture, evaluated one by one
    train_examples: int = 4096  # per pair count
    test_examples: int = 256  # per pair count
    batch_size: int = 32
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    intermediate_size: int = 128
    cg_steps_train: int = 8
    # gamma = sigmoid(6) ~ 0.9975 at init: a key seen 100 tokens before its query keeps ~78 %
    # of its weight (sigmoid(3) ~ 0.95 keeps 0.6 %, and the gate's gradient is then small).
    forget_bias_init: float = 6.0
    # the linear RNNs' short conv (k = 4) on softmax attention's q/k too: every mixer can then
    # bind a value to the key before it in one layer; plain attention needs a two-layer
    # induction circuit, which forms far more slowly (0: plain attention)
    attention_conv_size: int = 4
    eval_cg_steps: tuple[int, ...] = (0, 1, 2, 4, 8, 16)
    methods: tuple[str, ...] = METHODS
    train: TrainConfig = field(default_factory=lambda: train_config(300, warmup=30))


def accuracy(
    model: MesaNetLM,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    cg_steps: int | None = None,
    batch_size: int = 64,
) -> float:
    """Exact-match accuracy over the query positions (label != -100)."""
    hits, total = 0, 0
    with torch.no_grad():
        for i in range(0, len(inputs), batch_size):
            x, y = inputs[i : i + batch_size], labels[i : i + batch_size]
            pred = model(x, cg_steps=cg_steps)[0].argmax(-1)
            mask = y != -100
            hits += int((pred[mask] == y[mask]).sum())
            total += int(mask.sum())
    return hits / max(total, 1)


def make_data(
    cfg: MQARConfig, seed: int
) -> tuple[torch.Tensor, torch.Tensor, dict[int, tuple[torch.Tensor, torch.Tensor]]]:
    """The training pool (all pair counts, `train_examples` each) and a test set per count."""
    xs, ys = [], []
    test = {}
    for n_kv in cfg.kv_pairs:
        x, y = multiquery_ar(cfg.vocab_size, cfg.train_examples, cfg.seq_len, n_kv, seed + n_kv)
        xs.append(x)
        ys.append(y)
        x, y = multiquery_ar(
            cfg.vocab_size, cfg.test_examples, cfg.seq_len, n_kv, seed + 10_000 + n_kv
        )
        test[n_kv] = (torch.from_numpy(x), torch.from_numpy(y))
    return torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(ys)), test


def run(cfg: MQARConfig, seed: int = 0, device: str = "cpu") -> dict[str, Any]:
    """Train each method once on the mixture; accuracy per pair count; Mesa's CG sweep."""
    info = init_distributed(device)
    x_tr, y_tr, test = make_data(cfg, seed)
    test = {k: (x.to(info.device), y.to(info.device)) for k, (x, y) in test.items()}

    def batch_fn(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        rng = np.random.default_rng([seed, step])
        idx = torch.from_numpy(rng.integers(0, len(x_tr), cfg.batch_size))
        return x_tr[idx], y_tr[idx]

    accs: dict[str, list[float]] = {}
    final_loss: dict[str, float] = {}
    cg: dict[int, list[tuple[int, float]]] = {}
    for method in cfg.methods:
        torch.manual_seed(seed)
        mcfg = model_config(
            method,
            cfg,
            vocab_size=cfg.vocab_size,
            forget_bias_init=cfg.forget_bias_init,
            attention_conv_size=cfg.attention_conv_size,
        )
        model = MesaNetLM(mcfg)
        res = fit(model, lm_loss, batch_fn, cfg.train, desc=f"{method} mqar train", info=info)
        final_loss[method] = float(np.mean(res.losses[-20:]))
        accs[method] = [accuracy(model, *test[k]) for k in cfg.kv_pairs]
        if method == "mesa":
            cg = {
                k: [(s, accuracy(model, *test[k], cg_steps=s)) for s in cfg.eval_cg_steps]
                for k in cfg.kv_pairs
            }
    return {
        "accuracy": accs,
        "kv_pairs": list(cfg.kv_pairs),
        "cg_sweep": {str(k): v for k, v in cg.items()},
        "train_loss_last20": final_loss,
    }
