"""The PGM training objective and its evaluation NELBO, built on MDLM's terms (masked-diffusion).

Partition (authors' ``_q_xt_partition``): every position goes to group 1 with probability
``1 - alpha_t``, i.e. exactly where MDLM's forward process would put a mask, so the partition is
drawn with `masked_diffusion.q_xt` (group 1 = "masked"). Group 1 is predicted from group 0, an
MDLM state at time t; group 0 is predicted from group 1, an MDLM state at the complement time
``1 - t``. With the MDLM weight ``w(t) = -alpha'_t / (1 - alpha_t)``, the per-token loss is

    l_l = 1[g_l = 1] w(t) (-log p(x0_l | group 0)) + 1[g_l = 0] w(1 - t) (-log p(x0_l | group 1)),

and the training loss is ``mean_l l_l / 2`` (every token is supervised once per pass: two MDLM
NELBO estimates, at t and at 1 - t, halved). The evaluation NLL keeps group 1 only: then it is
exactly MDLM's continuous-time NELBO estimator (`masked_diffusion.nelbo`), comparable with MDLM's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from masked_diffusion import (
    Denoiser,
    Schedule,
    check_times,
    check_tokens,
    mdlm_loss,
    nelbo,
    nelbo_terms,
    noise_generator,
)


def as_denoiser(model: torch.nn.Module, vocab_size: int) -> Denoiser:
    """A PGM as an MDLM denoiser ``f(x_t, t) -> logits`` (the authors' "naive" full-length mode).

    Masked positions of ``x_t`` (id `vocab_size`) are group 1, the others group 0. The content of
    group-1 positions is invisible to group-1 logits (partition isolation), so a placeholder (0)
    is fed there; the logits of the masked positions are exact. With it every sampler and
    `masked_diffusion.nelbo` run on a PGM unchanged, at full-length cost.
    """

    cfg = getattr(model, "cfg", None)
    own = getattr(cfg, "vocab_size", None)
    if isinstance(own, int) and own != vocab_size:
        raise ValueError(f"vocab_size: expected the model's vocabulary {own}, got {vocab_size!r}")

    def denoise(x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        masked = x_t == vocab_size
        return model(x_t.masked_fill(masked, 0), masked)

    return denoise


@dataclass
class PartitionLoss:
    """What `pgm_loss` computed.

    loss: scalar, ``terms.mean()`` (nats per token); terms: (batch, L) per-token halved terms;
    t: (batch,) times; groups: (batch, L) bool partition (True = group 1); logits: (batch, L, V).
    """

    loss: torch.Tensor
    terms: torch.Tensor
    t: torch.Tensor
    groups: torch.Tensor
    logits: torch.Tensor


def partition_terms(
    logits: torch.Tensor,
    x0: torch.Tensor,
    groups: torch.Tensor,
    t: torch.Tensor,
    schedule: Schedule,
) -> torch.Tensor:
    """Per-token PGM loss terms (batch, L): group 1 weighted at t, group 0 at 1 - t, halved.

    Both halves are MDLM's `nelbo_terms`: group 1 plays the masked set at t, group 0 the masked
    set of the complement state at ``1 - t``.
    """
    v = logits.shape[-1]
    x_t = x0.masked_fill(groups, v)  # group 1 "masked"
    x_c = x0.masked_fill(~groups, v)  # complement: group 0 "masked"
    return 0.5 * (
        nelbo_terms(logits, x0, x_t, t, schedule) + nelbo_terms(logits, x0, x_c, 1.0 - t, schedule)
    )


def pgm_loss(
    model: torch.nn.Module, x0: torch.Tensor, schedule: Schedule, vocab_size: int, **noise: Any
) -> PartitionLoss:
    """One Monte-Carlo estimate of the PGM training loss (nats per token) on clean x0 (batch, L).

    MDLM's draw (`masked_diffusion.mdlm_loss`, whose keywords `noise` takes: ``generator``,
    ``antithetic``, ``sampling_eps``, ``t``): t ~ U[sampling_eps, 1) (antithetic by default, as
    MDLM/PGM) and ``x_t ~ q(x_t | x0)``, whose masked positions are group 1; then one
    full-length partitioned pass ``model(x0, groups)`` and `partition_terms`. PGM times must
    lie in (0, 1): group 0 is weighted at ``1 - t``.
    """
    t = noise.get("t")
    if t is not None:
        check_tokens(x0, vocab_size, "x0")
        check_times(t, x0.shape[0])
        if bool((t >= 1).any()):
            raise ValueError(
                f"t: PGM times must lie in (0, 1) (group 0 is weighted at 1 - t), got {t.max().item()}"
            )

    def partitioned(x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = model(x0, x_t == vocab_size)
        if logits.shape[-1] != vocab_size:
            raise ValueError(
                f"vocab_size: expected the model's vocabulary {logits.shape[-1]}, got {vocab_size}"
            )
        return logits

    out = mdlm_loss(partitioned, x0, schedule, vocab_size, **noise)
    groups = out.x_t == vocab_size
    terms = partition_terms(out.logits, x0, groups, out.t, schedule)
    return PartitionLoss(loss=terms.mean(), terms=terms, t=out.t, groups=groups, logits=out.logits)


def pgm_nelbo(
    model: torch.nn.Module, x0: torch.Tensor, schedule: Schedule, vocab_size: int, **options: Any
) -> float:
    """Validation NELBO (nats per token) of a PGM: group-1 tokens only, weight w(t).

    This is `masked_diffusion.nelbo` (whose keywords `options` takes: ``n_samples``,
    ``batch_size``, ``seed``, ``sampling_eps``) on `as_denoiser(model)`: the same estimator
    (and, with the same seed, the same t and partitions) as the MDLM baseline's validation NELBO.
    """
    return nelbo(as_denoiser(model, vocab_size), x0, schedule, vocab_size, **options)


def pgm_loss_fn(
    schedule: Schedule, vocab_size: int, *, sampling_eps: float = 1e-3
) -> Callable[[torch.nn.Module, dict[str, Any]], torch.Tensor]:
    """``loss_fn(model, batch)`` for `shared_core.train.fit` with `masked_diffusion.row_batches`.

    The times and partitions come from ``masked_diffusion.noise_generator(batch)`` (a pure
    function of the batch's seed and step), so a resumed run draws the same noise.
    """

    def loss_fn(model: torch.nn.Module, batch: dict[str, Any]) -> torch.Tensor:
        x0 = batch["x0"]
        g = noise_generator(batch, x0.device)
        return pgm_loss(
            model, x0, schedule, vocab_size, generator=g, sampling_eps=sampling_eps
        ).loss

    return loss_fn
