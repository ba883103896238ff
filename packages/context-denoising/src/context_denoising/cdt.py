"""Context Denoising Training: one step = score the context, damp the noise, train on it.

The step (the paper's Sec. 4 / Fig. 6; the equations as the public ``CDTTrainer`` runs them):

1. **Detect** (`embedding_gradients`): ``g_i = d CE(answer) / d e_i`` on detached input
   embeddings, parameters' gradients and the optimiser untouched, adapters disabled.
2. **Mask** (`noise_mask`): noise = context tokens with ``||g_i||_2 <= mean_j ||g_j||_2``.
3. **Perturb** (`perturbation`): ``e_i <- e_i - sigma_i g_i`` on the noise tokens
   (``"opposite"``); ``"both"`` also moves the other context tokens by ``+sigma_i g_i``;
   ``"other"`` moves only the non-noise tokens, by ``-sigma_i g_i``. The step size is
   ``sigma_i = eps / (1 + ||g_i||_2)`` when `eps` is given, else ``lr_t * scale``.
4. **Train**: the standard CE on ``E[x] + delta`` (delta detached, so the embedding matrix
   trains as in plain SFT) and an optimiser step. With ``sigma = 0`` this IS a plain SFT
   step, bit for bit.

`cdt_loss` is steps 1-4 up to the loss (a ``loss_fn`` for `shared_core.train.fit`, through
`make_cdt_loss`); `cdt_step` adds ``zero_grad / backward / clip / step`` for a user's loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from context_denoising._checks import VARIANTS, check_choice, check_number
from context_denoising.score import (
    embedding_gradients,
    lm_loss,
    noise_mask,
    token_norms,
    unwrap,
)


@dataclass(frozen=True)
class CDTConfig:
    """The knobs of a CDT step; the defaults are the public trainer's.

    eps: if given, ``sigma_i = eps / (1 + ||g_i||_2)`` (the trainer's ``adv_epsilon``);
        if None, ``sigma_i = lr_t * scale`` with ``lr_t`` the current learning rate.
    scale: the multiplier of ``lr_t`` (OpenRLHF trainer ``scale_factor``, default 1.0; the
        loomtrain trainer's ``beta`` is 1e-6, which makes the perturbation vanish).
    variant: ``"opposite"`` (perturb noise tokens only; the paper's CDT), ``"both"``, ``"other"``.
    """

    eps: float | None = None
    scale: float = 1.0
    variant: str = "opposite"

    def __post_init__(self) -> None:
        check_number("eps", self.eps, allow_none=True)
        check_number("scale", self.scale)
        check_choice("variant", self.variant, VARIANTS)


def perturbation(
    g: torch.Tensor,
    context_mask: torch.Tensor,
    config: CDTConfig,
    lr: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(delta, noise)``: the embedding shift (batch, time, dim) and the noise mask (batch, time).

    `g` are the embedding gradients (batch, time, dim); `lr` is the current learning rate,
    required when ``config.eps`` is None. ``delta`` is zero outside `context_mask`.
    """
    if not isinstance(config, CDTConfig):
        raise TypeError(f"config: expected a CDTConfig, got {type(config).__name__}")
    if g.ndim != 3 or g.shape[:2] != context_mask.shape:
        raise ValueError(
            f"g: expected shape (batch, time, dim) matching context_mask {tuple(context_mask.shape)}, "
            f"got {tuple(g.shape)}"
        )
    norm = token_norms(g, "l2")  # (batch, time)
    noise = noise_mask(norm, context_mask)
    if config.eps is not None:
        sigma = config.eps / (1.0 + norm)
    else:
        if lr is None:
            raise ValueError(
                "lr: sigma = lr_t * scale needs the current learning rate (or set CDTConfig.eps)"
            )
        check_number("lr", lr)
        sigma = torch.full_like(norm, lr * config.scale)
    if config.variant == "opposite":
        sign = -noise.to(norm.dtype)
    elif config.variant == "other":
        sign = -(context_mask & ~noise).to(norm.dtype)
    else:  # both: noise tokens move down the gradient, the other context tokens up it
        sign = noise.to(norm.dtype) * -1.0 + (context_mask & ~noise).to(norm.dtype)
    delta = (sigma * sign).unsqueeze(-1).to(g.dtype) * g
    return delta, noise


def cdt_loss(
    model: Any,
    batch: Mapping[str, Any],
    config: CDTConfig | None = None,
    lr: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The CE of the perturbed pass, and what the step measured.

    The measurements: ``noise_fraction`` (of the context), ``mean_grad_norm`` (``||g_i||_2``
    over the context) and ``shift_ratio`` (``||delta_i|| / ||e_i||``, mean over the tokens the
    variant moves: 0 means the step is plain SFT).

    `model` is any `transformers` causal LM (or a DDP wrapper of one); `batch` as in
    `check_batch`. Backpropagate the returned loss to train.
    """
    config = config or CDTConfig()
    if not isinstance(config, CDTConfig):
        raise TypeError(f"config: expected a CDTConfig, got {type(config).__name__}")
    if config.eps is None:
        if lr is None:
            raise ValueError(
                "lr: sigma = lr_t * scale needs the current learning rate (or set CDTConfig.eps)"
            )
        check_number("lr", lr)
    e, g, checked = embedding_gradients(model, batch)
    ctx = checked["context_mask"]
    delta, noise = perturbation(g, ctx, config, lr)
    moved = noise if config.variant == "opposite" else ctx & ~noise
    if config.variant == "both":
        moved = ctx
    shift = torch.linalg.vector_norm(delta.float(), dim=-1) / torch.linalg.vector_norm(
        e.float(), dim=-1
    ).clamp_min(1e-30)
    emb = unwrap(model).get_input_embeddings()(checked["input_ids"])
    logits = model(inputs_embeds=emb + delta, attention_mask=checked["attention_mask"]).logits
    loss = lm_loss(logits, checked["labels"])
    norms = token_norms(g, "l2")
    parts = {
        "noise_fraction": float(noise.sum() / ctx.sum()),
        "mean_grad_norm": float((norms * ctx).sum() / ctx.sum()),
        # how far the step moves an embedding, relative to its norm (mean over moved tokens)
        "shift_ratio": float(shift[moved].mean()) if moved.any() else 0.0,
    }
    return loss, parts


def sft_loss(model: Any, batch: Mapping[str, Any]) -> torch.Tensor:
    """The plain SFT loss (mean CE over the answer tokens) on the same batch format."""
    from context_denoising._checks import check_batch
    from context_denoising.score import vocab_size

    checked = check_batch(batch, vocab_size(model))
    out = model(input_ids=checked["input_ids"], attention_mask=checked["attention_mask"])
    return lm_loss(out.logits, checked["labels"])


def make_cdt_loss(
    config: CDTConfig | None = None,
) -> Callable[[Any, Mapping[str, Any]], tuple[torch.Tensor, dict[str, float]]]:
    """A ``loss_fn(model, batch)`` for `shared_core.train.fit` running the CDT step.

    `fit` does not hand the learning rate to a loss function, so when ``config.eps`` is None
    the batch must carry the step's rate as ``batch["lr"]`` (a float; `batch_fn` computes it
    as ``config.lr * lr_factor(step, config)``).
    """
    config = config or CDTConfig()

    def loss_fn(model: Any, batch: Mapping[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
        lr = batch.get("lr") if isinstance(batch, Mapping) else None
        return cdt_loss(model, batch, config, None if lr is None else float(lr))

    return loss_fn


def _finish_step(
    model: Any, loss: torch.Tensor, optimizer: torch.optim.Optimizer, grad_clip: float
) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss.backward()  # type: ignore[no-untyped-call]
    if grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(unwrap(model).parameters(), grad_clip)
    optimizer.step()


def cdt_step(
    model: Any,
    batch: Mapping[str, Any],
    optimizer: torch.optim.Optimizer,
    config: CDTConfig | None = None,
    *,
    lr: float | None = None,
    grad_clip: float = 0.0,
) -> dict[str, float]:
    """One CDT training step in a user's loop; returns ``{"loss", "noise_fraction", ...}``.

    `lr` defaults to the optimiser's current rate (``optimizer.param_groups[0]["lr"]``, i.e.
    after your scheduler's last ``step()``); step your scheduler yourself after this call.
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer: expected a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    check_number("grad_clip", grad_clip)
    if lr is None:
        lr = float(optimizer.param_groups[0]["lr"])
    loss, parts = cdt_loss(model, batch, config, lr)
    _finish_step(model, loss, optimizer, grad_clip)
    return {"loss": float(loss.detach()), **parts}


def sft_step(
    model: Any,
    batch: Mapping[str, Any],
    optimizer: torch.optim.Optimizer,
    *,
    grad_clip: float = 0.0,
) -> dict[str, float]:
    """One plain SFT step with the same loss and update as `cdt_step` (the baseline)."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer: expected a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    check_number("grad_clip", grad_clip)
    loss = sft_loss(model, batch)
    _finish_step(model, loss, optimizer, grad_clip)
    return {"loss": float(loss.detach())}
