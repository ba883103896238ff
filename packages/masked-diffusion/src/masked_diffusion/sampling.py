"""Samplers for masked diffusion models: MDLM ancestral, MaskGIT confidence, fixed-order.

All samplers take a *denoiser* ``f(x_t, t) -> logits (batch, length, vocab_size)`` (close over a
latent or a label to condition it, e.g. ``lambda x, t: model(x, t, cond=z)``), start from the
all-mask sequence (or from `x_init`), never change a token once it is unmasked (SUBS carry-over)
and unmask every position by the last step. Randomness comes only from the given
``torch.Generator``, so a seed fixes the samples.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from masked_diffusion.forward import check_tokens
from masked_diffusion.loss import Denoiser, check_logits
from masked_diffusion.schedule import LogLinearSchedule, Schedule


def _check_positive(name: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"{name}: expected a positive int, got {v!r}")
    return v


def _start(
    x_init: torch.Tensor | None,
    batch_size: int,
    seq_len: int,
    vocab_size: int,
    device: torch.device | str,
) -> torch.Tensor:
    _check_positive("vocab_size", vocab_size)
    if x_init is not None:
        check_tokens(x_init, vocab_size, "x_init", allow_mask=True)
        return x_init.clone().long()
    _check_positive("batch_size", batch_size)
    _check_positive("seq_len", seq_len)
    return torch.full((batch_size, seq_len), vocab_size, dtype=torch.long, device=device)


COUNTS = ("linear", "cosine", "arccos")


def _check_counts(counts: object) -> None:
    if counts not in COUNTS:
        raise ValueError(f"counts: expected one of {COUNTS}, got {counts!r}")


UnmaskProb = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
"""``r(x_t (batch, length), t (batch,), s (batch,)) -> (batch, length) or (batch, length, vocab)``:
the chance that a masked token at t is clean at s < t, per token or per token and clean value."""


def gumbel_argmax(logp: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Sample from Cat(softmax(logp)) by Gumbel-max with uniforms `u` of the same shape."""
    g = -torch.log(-torch.log(u.clamp(1e-20, 1.0 - 1e-7)))
    return (logp + g).argmax(dim=-1)


def time_grid(steps: int) -> torch.Tensor:
    """The times ``1 = t_0 > t_1 > ... > t_S = 0`` of an S-step sampler, shape (S + 1,).

    Ending at t = 0 (alpha = 1) makes the last step unmask everything (the PGM/Duo variant of
    MDLM's final noise removal).
    """
    _check_positive("steps", steps)
    return torch.linspace(1.0, 0.0, steps + 1)


@torch.no_grad()
def ancestral_sample(
    denoiser: Denoiser,
    *,
    vocab_size: int,
    steps: int,
    batch_size: int = 1,
    seq_len: int | None = None,
    schedule: Schedule | None = None,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    x_init: torch.Tensor | None = None,
    device: torch.device | str = "cpu",
    cache: bool = False,
    unmask_prob: UnmaskProb | None = None,
) -> torch.Tensor:
    """MDLM ancestral sampling (``_ddpm_caching_update``), `steps` steps from t = 1 to t = 0.

    From t to s < t, every masked token is unmasked with probability
    ``(alpha_s - alpha_t) / (1 - alpha_t)`` to a token drawn from ``softmax(logits / temperature)``
    (the SUBS posterior, MDLM Eq. 7); unmasked tokens are carried over.

    Args:
        denoiser: ``f(x_t, t) -> logits``.
        vocab_size: data vocabulary size; the mask id is `vocab_size`.
        steps: number of denoiser calls (>= 1).
        batch_size, seq_len: shape of the all-mask start (ignored with `x_init`).
        schedule: alpha_t (default log-linear with eps = 1e-3).
        temperature: softmax temperature (> 0).
        generator: torch generator; each step draws ``rand(batch, length)`` then
            ``rand(batch, length, vocab)``.
        x_init: (batch, length) partially masked start (in-filling).
        cache: reuse the last logits when no token changed (valid for denoisers that ignore t,
            MDLM's caching; saves calls without changing the samples).
        unmask_prob: element-wise schedules' hook ``r(x, t, s)`` (`UnmaskProb`). A
            (batch, length) answer ``r_l = (alpha_s^l - alpha_t^l) / (1 - alpha_t^l)`` replaces
            the shared unmask probability (rates that do not depend on the clean value: MELD);
            with ``r = (alpha_s - alpha_t) / (1 - alpha_t)`` everywhere it draws the same samples
            as without the hook. A (batch, length, vocab) answer ``r_lk`` (rates per clean value,
            GenMD4) gives the exact reverse step of the factorised posterior: the token is
            revealed with probability ``sum_k x_theta[k] r_lk`` as value ``k`` drawn with
            probability proportional to ``x_theta[k] r_lk``. Not called at the last step (every
            token is revealed at t = 0).

    Returns:
        (batch, length) long tensor of tokens in ``[0, vocab_size)``.
    """
    if seq_len is None and x_init is None:
        raise ValueError("seq_len: expected a positive int when x_init is None, got None")
    x = _start(x_init, batch_size, seq_len or 0, vocab_size, device)
    if not temperature > 0:
        raise ValueError(f"temperature: expected > 0, got {temperature!r}")
    schedule = schedule or LogLinearSchedule()
    ts = time_grid(steps).to(x.device)
    b, n = x.shape
    logits: torch.Tensor | None = None
    changed = True
    for i in range(steps):
        t, s = ts[i], ts[i + 1]
        if logits is None or changed or not cache:
            logits = denoiser(x, t.expand(b))
            check_logits(logits, x, vocab_size)
        u = torch.rand((b, n), generator=generator, device=x.device)
        g = torch.rand((b, n, vocab_size), generator=generator, device=x.device)
        logp = F.log_softmax(logits.float() / temperature, dim=-1)
        p_unmask: float | torch.Tensor = 1.0
        if i < steps - 1 and unmask_prob is None:
            p_unmask = float(schedule.unmask_prob(t, s))
        elif i < steps - 1 and unmask_prob is not None:
            r = _check_unmask(unmask_prob(x, t.expand(b), s.expand(b)), (b, n, vocab_size))
            if r.ndim == 3:
                logp = logp + torch.log(r.float())
                p_unmask = torch.logsumexp(logp, dim=-1).exp()
            else:
                p_unmask = r
        draw = gumbel_argmax(logp, g)
        reveal = (x == vocab_size) & (u < p_unmask)
        changed = bool(reveal.any())
        x = torch.where(reveal, draw, x)
    return x


def _check_unmask(r: object, shape: tuple[int, int, int]) -> torch.Tensor:
    if not isinstance(r, torch.Tensor) or not torch.is_floating_point(r):
        raise TypeError(f"unmask_prob: expected a floating tensor, got {type(r).__name__}")
    if tuple(r.shape) not in (shape[:2], shape):
        raise ValueError(
            f"unmask_prob: expected shape {shape[:2]} or {shape}, got {tuple(r.shape)}"
        )
    if bool(torch.isnan(r).any()) or bool((r < 0).any()) or bool((r > 1).any()):
        raise ValueError("unmask_prob: expected probabilities in [0, 1]")
    return r


def reveal_counts(n: int, steps: int, kind: str = "cosine") -> list[int]:
    """Cumulative number of revealed positions after each of `steps` steps; last entry is `n`.

    kind:
        ``"linear"``: ``round(n i / S)``.
        ``"cosine"``: MaskGIT, ``n - ceil(cos(pi/2 * i/S) n)`` (mask ratio gamma(r) = cos(pi r/2)).
        ``"arccos"``: Halton-MaskGIT, ``max(i, floor((1 - arccos(i/S) / (pi/2)) n))``.
    The counts are non-decreasing and clipped to ``[0, n]``.
    """
    _check_positive("n", n)
    _check_positive("steps", steps)
    out: list[int] = []
    for i in range(1, steps + 1):
        r = i / steps
        if kind == "linear":
            c = round(n * r)
        elif kind == "cosine":
            c = n - math.ceil(math.cos(0.5 * math.pi * r) * n - 1e-9)
        elif kind == "arccos":
            c = max(i, math.floor((1.0 - math.acos(r) / (0.5 * math.pi)) * n + 1e-9))
        else:
            raise ValueError(f"kind: expected 'linear', 'cosine' or 'arccos', got {kind!r}")
        out.append(min(n, max(out[-1] if out else 0, c)))
    out[-1] = n
    return out


@torch.no_grad()
def confidence_sample(
    denoiser: Denoiser,
    *,
    vocab_size: int,
    steps: int,
    batch_size: int = 1,
    seq_len: int | None = None,
    temperature: float = 1.0,
    choice_temperature: float = 0.0,
    counts: str = "cosine",
    generator: torch.Generator | None = None,
    x_init: torch.Tensor | None = None,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """MaskGIT confidence decoding (Chang et al. 2022, Sec. 3.2).

    At step i every masked position draws a token from ``softmax(logits / temperature)``; its
    confidence is ``log p(token) + choice_temperature * (1 - (i+1)/S) * Gumbel`` (annealed Gumbel
    noise; 0 gives greedy top-confidence, MaskGIT uses 4.5), and the most confident masked
    positions are revealed so that ``reveal_counts(L, S, counts)[i]`` are unmasked after step i.
    The denoiser is called with ``t`` = fraction still masked.

    Returns:
        (batch, length) long tensor of tokens in ``[0, vocab_size)``.
    """
    if seq_len is None and x_init is None:
        raise ValueError("seq_len: expected a positive int when x_init is None, got None")
    x = _start(x_init, batch_size, seq_len or 0, vocab_size, device)
    if not temperature > 0:
        raise ValueError(f"temperature: expected > 0, got {temperature!r}")
    if not choice_temperature >= 0:
        raise ValueError(f"choice_temperature: expected >= 0, got {choice_temperature!r}")
    _check_counts(counts)
    b, n = x.shape
    target = reveal_counts(n, _check_positive("steps", steps), counts)
    for i in range(steps):
        masked = x == vocab_size
        n_masked = masked.sum(dim=1)
        t = n_masked.float() / n
        logits = denoiser(x, t)
        check_logits(logits, x, vocab_size)
        logp = F.log_softmax(logits.float() / temperature, dim=-1)
        g = torch.rand((b, n, vocab_size), generator=generator, device=x.device)
        draw = gumbel_argmax(logp, g)
        conf = logp.gather(-1, draw.unsqueeze(-1)).squeeze(-1)
        u = torch.rand((b, n), generator=generator, device=x.device)
        anneal = choice_temperature * (1.0 - (i + 1) / steps)
        if anneal > 0:
            conf = conf + anneal * -torch.log(-torch.log(u.clamp(1e-20, 1.0 - 1e-7)))
        conf = conf.masked_fill(~masked, -math.inf)
        # Per row: reveal the k most confident masked positions, k = target - already revealed.
        k = (n_masked - (n - target[i])).clamp(min=0)
        rank = conf.argsort(dim=1, descending=True).argsort(dim=1)
        reveal = masked & (rank < k[:, None])
        x = torch.where(reveal, draw, x)
    return x


def random_order(
    batch_size: int, seq_len: int, generator: torch.Generator | None = None, device: str = "cpu"
) -> torch.Tensor:
    """A uniformly random decoding order per row: (batch, length) permutations of range(length)."""
    _check_positive("batch_size", batch_size)
    _check_positive("seq_len", seq_len)
    return torch.rand((batch_size, seq_len), generator=generator, device=device).argsort(dim=1)


def _van_der_corput(i: int, base: int) -> float:
    f, r = 1.0, 0.0
    while i > 0:
        f /= base
        r += f * (i % base)
        i //= base
    return r


def halton_order(height: int, width: int) -> torch.Tensor:
    """Halton order of an image grid (Besnier et al. 2025): (height * width,) flat indices.

    Points of the 2-D Halton sequence (base 2 for rows, base 3 for columns) scaled to the grid
    and floored; a cell enters at its first hit, so consecutive cells are spread out. Flat index
    is ``row * width + col`` (row-major, as `MaskedDiffusionTransformer` with ``grid``).
    """
    _check_positive("height", height)
    _check_positive("width", width)
    seen: dict[int, None] = {}
    i = 1
    while len(seen) < height * width:
        r = int(_van_der_corput(i, 2) * height)
        c = int(_van_der_corput(i, 3) * width)
        seen.setdefault(r * width + c, None)
        i += 1
    return torch.tensor(list(seen), dtype=torch.long)


@torch.no_grad()
def ordered_sample(
    denoiser: Denoiser,
    order: torch.Tensor,
    *,
    vocab_size: int,
    steps: int,
    batch_size: int = 1,
    temperature: float = 1.0,
    counts: str = "linear",
    generator: torch.Generator | None = None,
    x_init: torch.Tensor | None = None,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """Decode positions in a fixed `order`, ``reveal_counts(L, S, counts)`` of them by step i.

    The interface PGM-style samplers reuse: `order` is (length,) (shared, e.g. `halton_order`)
    or (batch, length) (e.g. `random_order`; then it sets the batch size), a permutation of the
    positions. At step i the next
    positions in the order get tokens from ``softmax(logits / temperature)``; positions already
    unmasked in `x_init` are skipped (carry-over). ``t`` passed to the denoiser is the masked
    fraction.
    """
    if not isinstance(order, torch.Tensor) or order.ndim not in (1, 2):
        raise ValueError("order: expected a (length,) or (batch, length) tensor of positions")
    n = order.shape[-1]
    if order.ndim == 2 and x_init is None:
        batch_size = order.shape[0]
    x = _start(x_init, batch_size, n, vocab_size, device)
    b = x.shape[0]
    if x.shape[1] != n or (order.ndim == 2 and order.shape[0] != b):
        raise ValueError(f"order: expected shape ({n},) or ({b}, {n}), got {tuple(order.shape)}")
    order = order.to(x.device).long().expand(b, n)
    if not torch.equal(order.sort(dim=1).values, torch.arange(n, device=x.device).expand(b, n)):
        raise ValueError("order: each row must be a permutation of range(length)")
    if not temperature > 0:
        raise ValueError(f"temperature: expected > 0, got {temperature!r}")
    _check_counts(counts)
    target = reveal_counts(n, _check_positive("steps", steps), counts)
    # rank_of[b, pos] = where pos sits in the order
    rank_of = order.argsort(dim=1)
    prev = 0
    for i in range(steps):
        masked = x == vocab_size
        t = masked.sum(dim=1).float() / n
        logits = denoiser(x, t)
        check_logits(logits, x, vocab_size)
        g = torch.rand((b, n, vocab_size), generator=generator, device=x.device)
        draw = gumbel_argmax(F.log_softmax(logits.float() / temperature, dim=-1), g)
        window = (rank_of >= prev) & (rank_of < target[i])
        x = torch.where(masked & window, draw, x)
        prev = target[i]
    return x
