"""The absorbing-state forward process q(x_t | x_0) of MDLM (Sec. 3.1) and time sampling.

Every token is masked independently: ``q(z_t | x) = Cat(z_t; alpha_t x + (1 - alpha_t) m)``,
where ``m`` is the one-hot of the mask token. The mask id is ``vocab_size`` (one past the data
vocabulary), so data tokens are ``0 .. vocab_size - 1``.
"""

from __future__ import annotations

import torch

from masked_diffusion.schedule import Schedule


def check_tokens(
    x: torch.Tensor, vocab_size: int, name: str = "x0", allow_mask: bool = False
) -> None:
    """Raise if `x` is not a (batch, length) integer tensor of ids in ``[0, vocab_size)``.

    With `allow_mask` the mask id ``vocab_size`` is also accepted.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise TypeError(f"{name}: expected an integer tensor, got dtype {x.dtype}")
    if x.ndim != 2:
        raise ValueError(f"{name}: expected shape (batch, length), got {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"{name}: expected a non-empty tensor, got shape {tuple(x.shape)}")
    hi = vocab_size + 1 if allow_mask else vocab_size
    lo_v, hi_v = int(x.min()), int(x.max())
    if lo_v < 0 or hi_v >= hi:
        raise ValueError(
            f"{name}: token ids must lie in [0, {hi - 1}] (vocab_size={vocab_size}"
            f"{', mask id included' if allow_mask else ''}), got range [{lo_v}, {hi_v}]"
        )


def check_times(t: object, batch_size: int) -> None:
    """Raise unless `t` is a (batch,) float tensor of diffusion times in (0, 1] (no NaN)."""
    if not isinstance(t, torch.Tensor) or not torch.is_floating_point(t):
        raise TypeError(f"t: expected a floating torch.Tensor of times, got {t!r:.80}")
    if t.ndim != 1 or t.shape[0] != batch_size:
        raise ValueError(f"t: expected shape ({batch_size},), got {tuple(t.shape)}")
    bad = ~((t > 0) & (t <= 1))  # also catches NaN
    if bad.any():
        raise ValueError(
            f"t: diffusion times must lie in (0, 1] (t = 0 has infinite ELBO weight), got "
            f"{float(t[bad][0])}"
        )


def check_per_token(name: str, v: object, shape: torch.Size) -> torch.Tensor:
    """Raise unless `v` is a floating tensor of `shape` (batch, length) with entries in [0, inf)."""
    if not isinstance(v, torch.Tensor) or not torch.is_floating_point(v):
        raise TypeError(f"{name}: expected a floating torch.Tensor, got {type(v).__name__}")
    if v.shape != shape:
        raise ValueError(f"{name}: expected shape {tuple(shape)}, got {tuple(v.shape)}")
    if bool(torch.isnan(v).any()) or bool((v < 0).any()):
        raise ValueError(f"{name}: expected non-negative values without NaN")
    return v


def sample_t(
    batch_size: int,
    *,
    antithetic: bool = True,
    sampling_eps: float = 1e-3,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """Diffusion times ``t ~ U[sampling_eps, 1]`` of shape (batch,), MDLM's ``_sample_t``.

    With `antithetic`, ``u_i = (u_i / n + i / n) mod 1`` (one stratum per example, low variance);
    then ``t = (1 - sampling_eps) u + sampling_eps``.
    """
    if not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size: expected a positive int, got {batch_size!r}")
    if not 0.0 <= sampling_eps < 1.0:
        raise ValueError(f"sampling_eps: expected 0 <= sampling_eps < 1, got {sampling_eps!r}")
    u = torch.rand(batch_size, generator=generator, device=device)
    if antithetic:
        u = (u / batch_size + torch.arange(batch_size, device=device) / batch_size) % 1.0
    return (1.0 - sampling_eps) * u + sampling_eps


def q_xt(
    x0: torch.Tensor,
    t: torch.Tensor,
    schedule: Schedule,
    mask_id: int,
    generator: torch.Generator | None = None,
    *,
    mask_prob: torch.Tensor | None = None,
) -> torch.Tensor:
    """Draw ``x_t ~ q(x_t | x_0)``: each token becomes `mask_id` with probability ``1 - alpha_t``.

    Args:
        x0: clean tokens, (batch, length), ids in ``[0, mask_id)``.
        t: times, (batch,).
        schedule: the alpha_t schedule.
        mask_id: the absorbing token (``vocab_size``).
        generator: torch generator for reproducible masks.
        mask_prob: per-token mask probabilities ``1 - alpha_t^l`` (batch, length) in [0, 1] of
            an element-wise schedule (MELD, GenMD4); replaces ``schedule.mask_prob(t)``. The
            uniforms are the same draws, so equal probabilities give the same `x_t`.

    Returns:
        x_t, (batch, length), same dtype as `x0`.
    """
    check_tokens(x0, mask_id, "x0")
    check_times(t, x0.shape[0])
    if mask_prob is None:
        p_mask = schedule.mask_prob(t)[:, None]
    else:
        p_mask = check_per_token("mask_prob", mask_prob, x0.shape)
    u = torch.rand(x0.shape, generator=generator, device=x0.device)
    return torch.where(u < p_mask, torch.full_like(x0, mask_id), x0)
