"""Finding 1: a 3x3 state kernel lets the state itself carry spatial dynamics (forced PDEs).

The task is the forced response of a linear field ``u_{k+1} = K * u_k + f_k`` (`convt3.data`):
the model reads the initial field (channel 0, given at k = 0 only, zeros after) and the
forcing ``f_k`` (channel 1) and must output ``u_{k+1}`` at every step. The field is never fed
back, so the model has to propagate it in its own state: exactly the state kernel's job. With
``K`` a 3x3 stencil (heat, advection-diffusion) a ConvSSM with a 3x3 state kernel can hold the
dynamics, one with a 1x1 kernel (ConvS5) cannot spread anything spatially over time. The
pointwise control (``K = 0.95 I``) needs no spatial state kernel, so there ConvT3 should tie
ConvS5. Models train on sequences of ``train_len`` steps and run open loop for
``max(horizons)`` steps; the metric is the MSE at horizon h relative to the field's variance.
"""

from __future__ import annotations

import numpy as np
import torch

from convt3.data import pde_trajectories
from convt3.experiments.common import build_models, per_horizon, train_next_frame, valid_horizon
from convt3.experiments.config import Config
from convt3.torch import PredictorConfig, count_parameters


def forced_response_io(traj: np.ndarray, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Trajectories ``(n, T, 2, H, W)`` -> inputs ``(n, T-1, 2, H, W)`` and targets ``(n, T-1, 1, H, W)``."""
    x = traj[:, :-1].copy() / scale
    x[:, 1:, 0] = 0.0  # the field is only given at k = 0
    y = traj[:, 1:, :1] / scale
    return torch.from_numpy(x), torch.from_numpy(y)


def run_task(
    kind: str,
    c: Config,
    models: tuple[str, ...],
    seed: int,
) -> dict[str, dict[str, object]]:
    """Train every arm on one PDE and evaluate its open-loop error per horizon."""
    horizons = c.horizons
    train = pde_trajectories(kind, c.n_train, c.train_len + 1, c.size, seed=seed)
    test = pde_trajectories(kind, c.n_test, max(horizons) + 1, c.size, seed=seed + 1)
    scale = float(train[:, :, 0].std())
    x_train, y_train = forced_response_io(train, scale)
    x_test, y_test = forced_response_io(test, scale)
    var = float(y_test.var())
    base = PredictorConfig(
        in_channels=2, out_channels=1, d_model=c.d_model, state_size=c.state_size,
        n_layers=c.n_layers,
        dt_min=c.dt_min,
        dt_max=c.dt_max,
    )  # fmt: skip
    results: dict[str, dict[str, object]] = {}
    for name, model in build_models(base, models, seed).items():
        losses = train_next_frame(
            model, x_train, y_train, c.steps, c.batch, c.lr, seed, desc=f"{kind} {name}"
        )
        with torch.no_grad():
            pred = model(x_test)
        err = ((pred - y_test) ** 2).mean((0, 2, 3, 4)).numpy() / var  # (time,)
        results[name] = {
            "params": count_parameters(model),
            "final_loss": float(np.mean(losses[-10:])),
            "errors": err,
            "horizon": per_horizon(err, horizons),
            "valid_horizon": valid_horizon(err, c.valid_threshold),
            "train_len": c.train_len,
            "example": (y_test[0, :, 0].numpy(), pred[0, :, 0].numpy()),
        }
    return results
