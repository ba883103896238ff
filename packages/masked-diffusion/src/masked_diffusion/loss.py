"""The MDLM continuous-time NELBO with the SUBS parameterisation (Sahoo et al. 2024, Sec. 3.2-3.3).

SUBS: the denoiser ``x_theta(z_t, t)`` puts (1) zero mass on the mask token and (2) carries
unmasked tokens over unchanged. Then the NELBO (MDLM Eq. 10-11) is

    L_NELBO = E_t E_q(z_t|x) [ sum_l w(t) * 1[z_t^l = m] * (-log x_theta^l(z_t, t)[x^l]) ],

with ``w(t) = -alpha'_t / (1 - alpha_t)`` (= 1/t for the log-linear schedule). Here a *denoiser*
is any callable ``denoiser(x_t, t) -> logits`` with ``x_t`` (batch, length) long and ``t``
(batch,) float, returning logits (batch, length, vocab_size) over the data vocabulary only: the
mask token has no logit, which is zero masking probability by construction.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from masked_diffusion.data import RowBatch, noise_generator
from masked_diffusion.forward import check_per_token, check_times, check_tokens, q_xt, sample_t
from masked_diffusion.schedule import Schedule
from shared_core.train import TrainConfig

Denoiser = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``denoiser(x_t (batch, length) long, t (batch,) float) -> logits (batch, length, vocab_size)``."""


def check_logits(logits: torch.Tensor, x_t: torch.Tensor, vocab_size: int) -> None:
    """Raise unless `logits` is a finite (batch, length, vocab_size) float tensor matching `x_t`."""
    if not isinstance(logits, torch.Tensor) or not torch.is_floating_point(logits):
        raise TypeError("logits: expected a floating torch.Tensor")
    want = (*x_t.shape, vocab_size)
    if tuple(logits.shape) != want:
        raise ValueError(f"logits: expected shape {want}, got {tuple(logits.shape)}")
    if torch.isnan(logits).any():
        raise ValueError("logits: the denoiser returned NaN")


def _compute(logits: torch.Tensor) -> torch.Tensor:
    """Logits in the loss's compute dtype: float32, or float64 when they already are."""
    return logits if logits.dtype == torch.float64 else logits.float()


def _check_vocab(vocab_size: object) -> None:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
        raise ValueError(f"vocab_size: expected a positive int, got {vocab_size!r}")


def subs_log_probs(logits: torch.Tensor, x_t: torch.Tensor, mask_id: int) -> torch.Tensor:
    """log x_theta(z_t, t) under SUBS: log-softmax on masked positions, carry-over elsewhere.

    Args:
        logits: (batch, length, vocab_size) with ``vocab_size == mask_id``.
        x_t: (batch, length) noisy tokens.

    Returns:
        (batch, length, vocab_size) log-probabilities; an unmasked position is the point mass
        at its token (0 there, -inf elsewhere).
    """
    logp = F.log_softmax(_compute(logits), dim=-1)
    unmasked = x_t != mask_id
    carry = torch.full_like(logp, -math.inf)
    carry.scatter_(-1, x_t.clamp(max=mask_id - 1).unsqueeze(-1), 0.0)
    return torch.where(unmasked.unsqueeze(-1), carry, logp)


def nelbo_terms(
    logits: torch.Tensor,
    x0: torch.Tensor,
    x_t: torch.Tensor,
    t: torch.Tensor,
    schedule: Schedule,
    *,
    weight: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-token NELBO integrand ``w(t) 1[x_t^l = m] (-log x_theta^l[x0^l])``, shape (batch, length).

    The mask id is ``logits.shape[-1]`` (= vocab_size). Carry-over makes unmasked terms exactly zero; summing over l and averaging over t gives an
    unbiased estimate of the sequence NELBO (MDLM Eq. 11).

    `weight` (batch, length) replaces ``w(t)`` by per-token weights ``-alpha_t^l' / (1 -
    alpha_t^l)`` of an element-wise schedule whose rates do not depend on the token's value
    (MELD); it may carry gradients (a learned schedule).
    """
    vocab_size = logits.shape[-1]
    check_logits(logits, x_t, vocab_size)
    check_tokens(x0, vocab_size, "x0")
    masked = x_t == vocab_size
    logits = _compute(logits)
    nll = -F.log_softmax(logits, dim=-1).gather(-1, x0.long().unsqueeze(-1)).squeeze(-1)
    if weight is None:
        w = schedule.weight(t.to(logits.dtype))[:, None]
    else:
        w = check_per_token("weight", weight, x0.shape).to(logits.dtype)
    return torch.where(masked, w * nll, torch.zeros_like(nll))


@dataclass
class LossOutput:
    """What `mdlm_loss` computed: the scalar `loss` and everything needed to reweight it.

    loss: mean NELBO per token (nats), ``terms.sum() / terms.numel()``.
    terms: (batch, length) per-token NELBO terms (zero where unmasked).
    t: (batch,) times; x_t: (batch, length) noisy input; logits: the denoiser output.
    """

    loss: torch.Tensor
    terms: torch.Tensor
    t: torch.Tensor
    x_t: torch.Tensor
    logits: torch.Tensor


def mdlm_loss(
    denoiser: Denoiser,
    x0: torch.Tensor,
    schedule: Schedule,
    vocab_size: int,
    *,
    generator: torch.Generator | None = None,
    antithetic: bool = True,
    sampling_eps: float = 1e-3,
    t: torch.Tensor | None = None,
) -> LossOutput:
    """One Monte-Carlo estimate of the MDLM NELBO (nats per token) for a batch of sequences.

    Draws t (antithetic by default) and ``x_t ~ q(x_t | x0)``, calls ``denoiser(x_t, t)`` and
    returns the per-token terms and their mean. Pass `t` to fix the times.
    """
    _check_vocab(vocab_size)
    check_tokens(x0, vocab_size, "x0")
    if not isinstance(schedule, Schedule):
        raise TypeError(
            f"schedule: expected a masked_diffusion.Schedule, got {type(schedule).__name__}"
        )
    if t is not None:
        check_times(t, x0.shape[0])
    else:
        t = sample_t(
            x0.shape[0],
            antithetic=antithetic,
            sampling_eps=sampling_eps,
            generator=generator,
            device=x0.device,
        )
    x_t = q_xt(x0, t, schedule, vocab_size, generator=generator)
    logits = denoiser(x_t, t)
    check_logits(logits, x_t, vocab_size)
    terms = nelbo_terms(logits, x0, x_t, t, schedule)
    return LossOutput(loss=terms.mean(), terms=terms, t=t, x_t=x_t, logits=logits)


class NELBOEstimate(float):
    """`nelbo`'s result: a float (the mean, nats per token) with its Monte-Carlo standard error.

    ``stderr`` is the standard deviation of the per-(sequence, draw) estimates divided by the
    square root of their number ``n``; the antithetic times make draws within a batch
    negatively correlated, so it errs on the large side.
    """

    stderr: float
    n: int

    def __new__(cls, mean: float, stderr: float, n: int) -> NELBOEstimate:
        obj = super().__new__(cls, mean)
        obj.stderr, obj.n = stderr, n
        return obj

    def __repr__(self) -> str:
        return f"NELBOEstimate({float(self)!r}, stderr={self.stderr!r}, n={self.n})"


@torch.no_grad()
def nelbo(
    denoiser: Denoiser,
    x0: torch.Tensor,
    schedule: Schedule,
    vocab_size: int,
    *,
    n_samples: int = 8,
    batch_size: int = 256,
    seed: int = 0,
    sampling_eps: float = 1e-3,
) -> NELBOEstimate:
    """Validation NELBO in nats per token: `n_samples` antithetic (t, x_t) draws per sequence.

    Returns a float with ``.stderr``. Rows are paired with the antithetic strata by a random
    permutation drawn per batch (seeded), so reseeding re-pairs them.

    What it bounds: with ``alpha_1 = 0`` (``LogLinearSchedule(eps=0)``) and
    ``sampling_eps=0`` it is an unbiased estimate of the continuous-time NELBO, an upper bound
    on the model's ``-log p(x)`` (tight for the exact denoiser; tested against exact
    enumeration). With MDLM's defaults (schedule eps = 1e-3: ``alpha_1 = 1e-3``, and t on
    ``[1e-3, 1]``) the prior term at t = 1 and the ``t < 1e-3`` part of the integral are left
    out, so it is NOT guaranteed to be an upper bound: with the exact denoiser it sits slightly
    below the NLL (by about 1e-3 x NLL in the test). Use ``shared_core.metrics.bits_per_dim``
    for bits per token.
    """
    _check_vocab(vocab_size)
    check_tokens(x0, vocab_size, "x0")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size: expected a positive int, got {batch_size!r}")
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples <= 0:
        raise ValueError(f"n_samples: expected a positive int, got {n_samples!r}")
    g = torch.Generator(device=x0.device).manual_seed(seed)
    per_row: list[torch.Tensor] = []
    for _ in range(n_samples):
        for start in range(0, x0.shape[0], batch_size):
            xb = x0[start : start + batch_size]
            t = sample_t(xb.shape[0], sampling_eps=sampling_eps, generator=g, device=x0.device)
            t = t[torch.randperm(xb.shape[0], generator=g, device=x0.device)]
            t = t.clamp_min(torch.finfo(t.dtype).tiny)  # sampling_eps = 0 can draw t = 0
            out = mdlm_loss(denoiser, xb, schedule, vocab_size, generator=g, t=t)
            per_row.append(out.terms.double().mean(dim=1).cpu())
    values = torch.cat(per_row)
    n = values.numel()
    stderr = float(values.std() / math.sqrt(n)) if n > 1 else math.inf
    return NELBOEstimate(float(values.mean()), stderr, n)


def mdlm_loss_fn(
    schedule: Schedule, vocab_size: int, *, sampling_eps: float = 1e-3
) -> Callable[[torch.nn.Module, RowBatch], torch.Tensor]:
    """``loss_fn(model, batch)`` for `shared_core.train.fit` with `row_batches`: the MDLM NELBO.

    The times and masks come from ``noise_generator(batch)``, so they are a pure function of
    the batch's seed and step. `model` is called as ``model(x_t, t)`` (DDP-safe).
    """
    _check_vocab(vocab_size)

    def loss_fn(model: torch.nn.Module, batch: RowBatch) -> torch.Tensor:
        x0 = batch["x0"]
        g = noise_generator(batch, x0.device)
        out = mdlm_loss(
            lambda x, t: model(x, t), x0, schedule, vocab_size,
            generator=g, sampling_eps=sampling_eps,
        )  # fmt: skip
        return out.loss

    return loss_fn


def mdlm_train_config(
    steps: int, lr: float = 3e-4, warmup: int = 2500, grad_clip: float = 1.0, **kw: Any
) -> TrainConfig:
    """MDLM's optimiser as a `shared_core.train.TrainConfig`: AdamW with its default betas
    (0.9, 0.999), no weight decay, linear warm-up over `warmup` steps, then a CONSTANT rate.

    The defaults are MDLM's OWT setting; other `TrainConfig` fields go through `kw`.
    """
    return TrainConfig(
        steps=steps, lr=lr, warmup=warmup, schedule="constant", weight_decay=0.0,
        betas=(0.9, 0.999), grad_clip=grad_clip, **kw,
    )  # fmt: skip
