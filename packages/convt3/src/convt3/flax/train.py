"""Training the Flax modules: a JAX/optax twin of `shared_core.train.fit`.

The same recipe as the repository's torch loop, so one experiment can run on either
framework and give the same curve: the `shared_core.train.TrainConfig` schedule
(`lr_factor`: linear warm-up, then cosine), AdamW (``optax.adamw``: decoupled weight decay,
``eps = 1e-8`` outside the square root, as ``torch.optim.AdamW``) with decay on parameters of
2 or more dimensions only (`shared_core.train.decay_groups`' rule), and global-norm clipping
with torch's ``clip_grad_norm_`` coefficient ``min(1, clip / (norm + 1e-6))``. Kept in convt3
(no other package trains Flax modules through `fit` yet).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from shared_core.train import TrainConfig, lr_factor

__all__ = ["fit_flax"]


def fit_flax(
    model: nnx.Module,
    loss_fn: Callable[[nnx.Module, Any], jax.Array],
    batch_fn: Callable[[int], Any],
    config: TrainConfig,
    desc: str = "fit_flax",
) -> list[float]:
    """Train `model` in place for ``config.steps`` steps; return the loss of every step.

    Args:
        model: any ``nnx.Module``; its ``nnx.Param`` leaves are trained.
        loss_fn: ``loss_fn(model, batch) -> scalar`` (traced under ``jax.jit``).
        batch_fn: ``batch_fn(step) -> batch`` (arrays), a pure function of the step.
        config: the torch loop's `TrainConfig` (``amp_dtype`` and checkpoints are not supported).
    """
    if not isinstance(model, nnx.Module):
        raise TypeError(f"model: expected a flax.nnx.Module, got {type(model).__name__}")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config: expected a shared_core.train.TrainConfig, got {config!r}")
    if config.amp_dtype is not None:
        raise ValueError(f"config.amp_dtype: expected None for fit_flax, got {config.amp_dtype!r}")
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)  # type: ignore[misc]
    tx = optax.inject_hyperparams(optax.adamw)(
        learning_rate=config.lr, b1=config.betas[0], b2=config.betas[1], eps=1e-8,
        weight_decay=config.weight_decay,
        mask=lambda p: jax.tree.map(lambda x: x.ndim >= 2, p),
    )  # fmt: skip
    opt_state = tx.init(params)

    @jax.jit
    def step(params: Any, opt_state: Any, batch: Any) -> tuple[Any, Any, jax.Array]:
        loss, grads = jax.value_and_grad(lambda p: loss_fn(nnx.merge(graphdef, p, rest), batch))(
            params
        )
        if config.grad_clip > 0:
            coef = jnp.minimum(1.0, config.grad_clip / (optax.tree.norm(grads) + 1e-6))
            grads = jax.tree.map(lambda g: g * coef, grads)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    losses = []
    for s in range(config.steps):
        opt_state.hyperparams["learning_rate"] = config.lr * lr_factor(s, config)
        params, opt_state, loss = step(params, opt_state, batch_fn(s))
        value = float(loss)
        if not math.isfinite(value):
            raise FloatingPointError(
                f"{desc}: loss is {value} at step {s}; lower lr or check the data"
            )
        losses.append(value)
    nnx.update(model, params)
    return losses
