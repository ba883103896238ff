"""Finding 2: moving digits (Moving-MNIST's recipe with sklearn's 8x8 digits), closed loop.

Two digits bounce on a canvas; a model reads ``context`` frames and predicts the next
``future`` frames from its own outputs (`FramePredictor.rollout`, the state carried step by
step). Training is teacher-forced next-frame MSE on sequences of ``context + future`` frames.
Metrics per horizon: frame MSE and SSIM (7x7 uniform windows).
"""

from __future__ import annotations

import numpy as np
import torch

from convt3.data import load_digit_images, moving_digits
from convt3.experiments.common import build_models, train_next_frame
from convt3.experiments.config import Config
from convt3.torch import PredictorConfig, count_parameters
from shared_core.metrics import ssim


def digit_horizons(future: int) -> tuple[int, ...]:
    return tuple(h for h in (1, 5, 10, 20, 40, 100, 400, 800) if h <= future)


def run_digits(c: Config, seed: int) -> dict[str, dict[str, object]]:
    """Train every arm on moving digits and evaluate closed-loop rollouts."""
    images = load_digit_images()
    split = len(images) * 4 // 5  # digits of the test sequences are unseen in training
    T = c.context + c.future
    train = torch.from_numpy(moving_digits(images[:split], c.digit_train, T, c.canvas, seed=seed))
    test = moving_digits(images[split:], c.digit_test, T, c.canvas, seed=seed + 1)
    base = PredictorConfig(
        in_channels=1, out_channels=1, d_model=c.d_model, state_size=c.state_size,
        n_layers=c.n_layers,
        dt_min=c.dt_min,
        dt_max=c.dt_max,
    )  # fmt: skip
    horizons = digit_horizons(c.future)
    results: dict[str, dict[str, object]] = {}
    truth = test[:, c.context :, 0]
    for name, model in build_models(base, c.digit_models, seed).items():
        losses = train_next_frame(
            model, train[:, :-1], train[:, 1:], c.digit_steps, c.digit_batch, c.lr, seed,
            desc=f"digits {name}",
        )  # fmt: skip
        pred = model.rollout(torch.from_numpy(test[:, : c.context]), c.future)[:, :, 0].numpy()
        pred = np.clip(pred, 0.0, 1.0)
        mse = ((pred - truth) ** 2).mean((0, 2, 3))
        s = ssim(pred, truth).mean(0)
        results[name] = {
            "params": count_parameters(model),
            "final_loss": float(np.mean(losses[-10:])),
            "mse": {h: float(mse[h - 1]) for h in horizons},
            "ssim": {h: float(s[h - 1]) for h in horizons},
            "mse_curve": mse,
            "frames": pred[0],
        }
    results["_truth"] = {"frames": truth[0], "context": test[0, : c.context, 0]}
    return results
