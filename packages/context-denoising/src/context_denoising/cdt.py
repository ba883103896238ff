"""Context Denoising Training: one step = score the tokens, damp the noise, train on it.

The step (paper Sec. 4, "Emphasizing Training"; LOOM-Train ``CDTTrainer``):

1. **Detect** (`embedding_gradients`): ``g_i = d CE(answer) / d E(x_i)`` on detached input
   embeddings, parameters' gradients and the optimiser untouched, adapters disabled.
2. **Mask** (`noise_mask`): ``I(x_i) = 1`` (noise) when ``||g_i||_2 <= t``, ``t`` the mean of
   ``||g_j||_2`` over the row (the code's ``~(l2_grad > avg_grad)`` with ``avg_grad`` over the
   whole sequence; the paper writes ``<``; equal norms are measure-zero).
3. **Perturb** (`perturbation`): ``E(x_i)' = E(x_i) - I(x_i) g_i lr beta`` with ``lr`` the
   scheduler's current rate and ``beta = 5`` (the paper's main setting, ``lr = 1e-5``:
   ``lr * beta = 5e-5``; gains saturate near ``8e-5``). ``"other"`` / ``"both"`` are the
   code's variants (`CDTConfig.signs`).
4. **Train**: ``L_CDT = CE(f(E(X)'), Y)`` with the shift detached (the embedding matrix trains
   as in SFT) and an optimiser step. With ``sigma = 0`` this IS a plain SFT step, bit for bit.

`cdt_loss` is steps 1-4 up to the loss (a ``loss_fn`` for `shared_core.train.fit`, through
`make_cdt_loss`); `cdt_step` adds ``zero_grad / backward / clip / step`` for a user's loop;
`context_denoising.trainer.CDTTrainer` runs it inside a `transformers.Trainer`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from context_denoising._checks import (
    REGIONS,
    SIGNS,
    VARIANTS,
    check_batch,
    check_choice,
    check_number,
)
from context_denoising.score import (
    embedding_gradients,
    embedding_hook,
    forward,
    lm_loss,
    noise_mask,
    token_norms,
    unwrap,
    vocab_size,
)


@dataclass(frozen=True)
class CDTConfig:
    """The knobs of a CDT step; the defaults are the paper's.

    beta: ``sigma = lr_t * beta`` when `eps` is None (paper: ``beta = 5``; the LOOM-Train code's
        config default is ``1e-6``; the OpenRLHF copy's ``scale_factor`` and our 0.1 default
        are ``1.0``).
    eps: if given, ``sigma_i = eps / (1 + ||g_i||_2)`` instead (the code's ``epsilon`` option).
    variant: ``"opposite"`` (move the noise tokens, ``-sigma g``: the paper's CDT), ``"other"``
        (move the other tokens), ``"both"``.
    signs: the direction of ``"other"``: ``"loomtrain"`` (LOOM-Train and the Megatron copy:
        ``+sigma g`` on the large-gradient tokens, so ``"both"`` = ``"opposite"`` + ``"other"``)
        or ``"openrlhf"`` (the OpenRLHF copy: ``-sigma g``). ``"both"`` is the same in each.
    region: the tokens averaged over and moved: ``"row"`` (every attended token of the row,
        answer tokens included: the paper and code) or ``"context"`` (the batch's
        `context_mask`: our 0.1 rule).
    """

    beta: float = 5.0
    eps: float | None = None
    variant: str = "opposite"
    signs: str = "loomtrain"
    region: str = "row"

    def __post_init__(self) -> None:
        check_number("beta", self.beta)
        check_number("eps", self.eps, allow_none=True)
        check_choice("variant", self.variant, VARIANTS)
        check_choice("signs", self.signs, SIGNS)
        check_choice("region", self.region, REGIONS)


# Named settings: the paper's, the authors' two trainers', and this package's 0.1 rule.
PRESETS: dict[str, CDTConfig] = {
    "paper": CDTConfig(),
    "loomtrain": CDTConfig(beta=1e-6),
    "openrlhf": CDTConfig(beta=1.0, signs="openrlhf"),
    "v0.1": CDTConfig(beta=1.0, signs="openrlhf", region="context"),
}


def _sign(noise: torch.Tensor, region: torch.Tensor, config: CDTConfig) -> torch.Tensor:
    """Per-token sign of ``sigma g`` in the shift, (batch, time), in {-1, 0, +1}."""
    noisy = noise.float()
    large = (region & ~noise).float()
    other = -large if config.signs == "openrlhf" else large
    if config.variant == "opposite":
        return -noisy
    if config.variant == "other":
        return other
    return large - noisy  # both: noise tokens down the gradient, the others up it


def perturbation(
    g: torch.Tensor,
    region: torch.Tensor,
    config: CDTConfig,
    lr: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(delta, noise)``: the embedding shift (batch, time, dim) and the noise mask (batch, time).

    `g` are the embedding gradients (batch, time, dim); `region` (batch, time) bool the tokens
    averaged over and eligible to move (`CDTConfig.region`); `lr` is the current learning
    rate, required when ``config.eps`` is None. ``delta`` is zero outside `region`.
    """
    if not isinstance(config, CDTConfig):
        raise TypeError(f"config: expected a CDTConfig, got {type(config).__name__}")
    if g.ndim != 3 or g.shape[:2] != region.shape:
        raise ValueError(
            f"g: expected shape (batch, time, dim) matching the mask {tuple(region.shape)}, "
            f"got {tuple(g.shape)}"
        )
    norm = token_norms(g, "l2")  # (batch, time)
    noise = noise_mask(norm, region)
    if config.eps is not None:
        sigma = config.eps / (1.0 + norm)
    else:
        if lr is None:
            raise ValueError(
                "lr: sigma = lr_t * beta needs the current learning rate (or set CDTConfig.eps)"
            )
        check_number("lr", lr)
        sigma = torch.full_like(norm, lr * config.beta)
    delta = (sigma * _sign(noise, region, config).to(norm.dtype)).unsqueeze(-1).to(g.dtype) * g
    return delta, noise


def region_mask(checked: Mapping[str, torch.Tensor], config: CDTConfig) -> torch.Tensor:
    """The tokens `config.region` names, (batch, time) bool."""
    if config.region == "context":
        return checked["context_mask"]
    return checked["attention_mask"].bool()


def cdt_loss(
    model: Any,
    batch: Mapping[str, Any],
    config: CDTConfig | None = None,
    lr: float | None = None,
    *,
    reduction: str = "mean",
) -> tuple[torch.Tensor, dict[str, float]]:
    """The CE of the perturbed pass, and what the step measured.

    `reduction`: ``"mean"`` over the batch's answer tokens, or ``"sum"`` (a Trainer divides
    by ``num_items_in_batch``). The measurements: ``noise_fraction`` (of the region),
    ``mean_grad_norm`` (``||g_i||_2`` over the region) and ``shift_ratio`` (``||delta_i|| / ||e_i||``, mean over the tokens the
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
                "lr: sigma = lr_t * beta needs the current learning rate (or set CDTConfig.eps)"
            )
        check_number("lr", lr)
    e, g, checked = embedding_gradients(model, batch, require_context=config.region == "context")
    region = region_mask(checked, config)
    delta, noise = perturbation(g, region, config, lr)
    moved = _sign(noise, region, config) != 0
    shift = torch.linalg.vector_norm(delta.float(), dim=-1) / torch.linalg.vector_norm(
        e.float(), dim=-1
    ).clamp_min(1e-30)
    with embedding_hook(model, lambda emb: emb + delta):  # through the wrapper's forward
        logits = forward(model, checked, input_ids=checked["input_ids"]).logits
    loss = lm_loss(logits, checked["labels"], reduction=reduction)
    norms = token_norms(g, "l2")
    parts = {
        "noise_fraction": float(noise.sum() / region.sum()),
        "mean_grad_norm": float((norms * region).sum() / region.sum()),
        # how far the step moves an embedding, relative to its norm (mean over moved tokens)
        "shift_ratio": float(shift[moved].mean()) if moved.any() else 0.0,
    }
    return loss, parts


def sft_loss(model: Any, batch: Mapping[str, Any], *, reduction: str = "mean") -> torch.Tensor:
    """The plain SFT loss (CE over the answer tokens, `reduction` as in `cdt_loss`)."""
    checked = check_batch(batch, vocab_size(model), require_context=False)
    out = forward(model, checked, input_ids=checked["input_ids"])
    return lm_loss(out.logits, checked["labels"], reduction=reduction)


def make_cdt_loss(
    config: CDTConfig | None = None,
) -> Callable[..., tuple[torch.Tensor, dict[str, float]]]:
    """A ``loss_fn(model, batch, *, lr=None)`` for `shared_core.train.fit` running the CDT step.

    `fit` passes the step's learning rate as ``lr`` (it is needed for ``sigma = lr_t * beta``
    when ``config.eps`` is None).
    """
    config = config or CDTConfig()

    def loss_fn(
        model: Any, batch: Mapping[str, Any], *, lr: float | None = None
    ) -> tuple[torch.Tensor, dict[str, float]]:
        return cdt_loss(model, batch, config, lr)

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
