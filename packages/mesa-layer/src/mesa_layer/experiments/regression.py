"""In-context linear regression (d = 16, T = 128): error vs position, MesaNet vs baselines vs ridge.

A Mesa head with ``k = x_{t-1}``, ``v = y_{t-1}``, ``q = x_t`` and ``gamma = beta = 1`` computes
the ridge-regression prediction exactly, so MesaNet should approach the ridge oracle once it
has seen more than d examples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from mesa_layer.data import regression_batch, ridge_oracle_mse
from mesa_layer.experiments.common import METHODS, cg_sweep, model_config, train_config
from mesa_layer.torch.model import MesaNetBackbone, MesaNetConfig
from shared_core.distributed import init_distributed
from shared_core.train import TrainConfig, fit


@dataclass
class RegressionConfig:
    d: int = 16
    T: int = 128
    noise: float = 0.1
    batch_size: int = 16
    hidden_size: int = 64
    num_layers: int = 1
    num_heads: int = 4
    intermediate_size: int = 128
    cg_steps_train: int = 8
    forget_bias_init: float = 3.0  # gamma ~ 0.95 at init
    eval_batch: int = 128
    eval_cg_steps: tuple[int, ...] = (1, 2, 4, 8, 16)
    methods: tuple[str, ...] = METHODS
    train: TrainConfig = field(default_factory=lambda: train_config(150, lr=1e-2, warmup=10))


class RegressionModel(nn.Module):
    """Linear read-in of ``[x_t, x_{t-1}, y_{t-1}]``, a MesaNet backbone, scalar read-out."""

    def __init__(self, d: int, cfg: MesaNetConfig) -> None:
        super().__init__()
        self.read_in = nn.Linear(2 * d + 1, cfg.hidden_size)
        self.backbone = MesaNetBackbone(cfg)
        self.read_out = nn.Linear(cfg.hidden_size, 1)

    def forward(self, tokens: torch.Tensor, cg_steps: int | None = None) -> torch.Tensor:
        return self.read_out(self.backbone(self.read_in(tokens), cg_steps=cg_steps))[..., 0]


def constructed_mse(
    tokens: np.ndarray, y: np.ndarray, d: int, lam: float
) -> dict[str, list[float]]:
    """Per-position MSE of each mixing rule with hand-set weights ``k = x_{t-1}, v = y_{t-1}, q = x_t``.

    Mesa (``gamma = beta = 1``, ``Lambda = lam``) is ridge regression on the examples seen;
    linear attention is one gradient step from ``w = 0`` with the MSE-optimal step
    ``1 / (t + d + 1)``; DeltaNet is online GD on normalised keys with ``beta = 0.5``.
    """
    from mesa_layer.torch.baselines import delta_rule
    from mesa_layer.torch.chunk import mesa_chunk

    tok = torch.from_numpy(tokens).double()
    target = torch.from_numpy(y).double()
    B, T, _ = tok.shape
    q, k, v = tok[..., None, :d], tok[..., None, d : 2 * d], tok[..., None, 2 * d :]
    ones, zeros = (
        torch.ones(B, T, 1, dtype=torch.float64),
        torch.zeros(B, T, 1, dtype=torch.float64),
    )
    lam_t = torch.full((1, d), lam, dtype=torch.float64)
    mesa, _ = mesa_chunk(q, k, v, zeros, ones, lam_t, max_cg_steps=2 * d)
    t = torch.arange(T, dtype=torch.float64)
    gla = torch.cumsum(v * k, 1)  # sum_{i<t} y_i x_i
    gla = (gla[..., 0, :] * q[..., 0, :]).sum(-1, keepdim=True) / (t[:, None] + d + 1)
    norm = k.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    delta = delta_rule(q, k / norm, v / norm, 0.5 * (norm[..., 0] > 1e-12).double())
    return {
        name: ((pred[..., 0, 0] if pred.ndim == 4 else pred[..., 0]) - target)
        .pow(2)
        .mean(0)
        .tolist()
        for name, pred in (("mesa", mesa), ("gla", gla), ("deltanet", delta))
    }


def run(cfg: RegressionConfig, seed: int = 0, device: str = "cpu") -> dict[str, Any]:
    """Train each method; return per-position MSE, the ridge oracle and Mesa's CG sweep."""
    info = init_distributed(device)
    eval_rng = np.random.default_rng(seed + 10_000)
    ev_tokens, ev_y = regression_batch(cfg.eval_batch, cfg.T, cfg.d, cfg.noise, eval_rng)
    oracle = ridge_oracle_mse(ev_tokens, ev_y, cfg.d, lam=max(cfg.noise**2 * cfg.d, 1e-6))
    ev_x, ev_t = (torch.from_numpy(a).to(info.device) for a in (ev_tokens, ev_y))
    results: dict[str, Any] = {"oracle": oracle.tolist(), "mse": {}, "final_loss": {}}
    results["constructed"] = constructed_mse(
        ev_tokens, ev_y, cfg.d, lam=max(cfg.noise**2 * cfg.d, 1e-6)
    )

    def batch_fn(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        rng = np.random.default_rng([seed, step])
        tokens, y = regression_batch(cfg.batch_size, cfg.T, cfg.d, cfg.noise, rng)
        return torch.from_numpy(tokens), torch.from_numpy(y)

    def loss_fn(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        tokens, y = batch
        return ((model(tokens) - y) ** 2).mean()

    for method in cfg.methods:
        torch.manual_seed(seed)
        mcfg = model_config(method, cfg, forget_bias_init=cfg.forget_bias_init)
        model = RegressionModel(cfg.d, mcfg)
        losses = fit(
            model, loss_fn, batch_fn, cfg.train, desc=f"{method} regression train", info=info
        ).losses
        with torch.no_grad():
            err = ((model(ev_x) - ev_t) ** 2).mean(0).cpu().numpy()
        results["mse"][method] = err.tolist()
        results["final_loss"][method] = float(np.mean(losses[-5:]))
        results.setdefault("first_loss", {})[method] = float(np.mean(losses[:5]))
        if method == "mesa":
            beyond = slice(cfg.d + 1, None)

            def evaluate(steps: int | None, model=model, beyond=beyond) -> float:
                return float(((model(ev_x, cg_steps=steps) - ev_t) ** 2)[:, beyond].mean())

            results["cg_sweep"] = cg_sweep(evaluate, cfg.eval_cg_steps)
    return results
