"""Packed PGM samplers: the encoder sees only the clean tokens, the decoder only this step's queries.

Each sampler is the *same algorithm* (and draws the *same random numbers* from the generator) as
its masked-diffusion counterpart run on `pgm.as_denoiser(model)`, the full-length "naive" mode;
only the network calls are packed:

- `pgm_ordered_sample` = `masked_diffusion.ordered_sample`: decode in a fixed order,
  ``reveal_counts(L, S, counts)`` positions revealed by step i. A random order per row
  (`masked_diffusion.random_order`, ``counts="linear"``) is the authors' ``efficient-uniform``
  text sampler; `masked_diffusion.halton_order` with ``counts="arccos"`` is their Halton sampler
  for images. At step i the encoder runs on BOS + the already revealed tokens (length
  ``1 + reveal_counts[i-1]``) and the decoder only on the positions revealed at step i.
- `pgm_confidence_sample` = `masked_diffusion.confidence_sample` (MaskGIT): the decoder queries
  every still-unrevealed position (confidence is needed for each), the encoder the revealed ones.

Randomness comes only from the generator, so a seed fixes the samples.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from masked_diffusion import gumbel_argmax, reveal_counts
from masked_diffusion.sampling import COUNTS

from pgm.model import PartitionTransformer


def _check_positive(name: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"{name}: expected a positive int, got {v!r}")
    return v


def _check_counts(counts: object) -> str:
    if counts not in COUNTS:
        raise ValueError(f"counts: expected one of {COUNTS}, got {counts!r}")
    return str(counts)


def _check_model(model: object) -> PartitionTransformer:
    if not isinstance(model, PartitionTransformer):
        raise TypeError(f"model: expected a PartitionTransformer, got {type(model).__name__}")
    return model


def _gather_v(u: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    return u.gather(1, pos[..., None].expand(-1, -1, u.shape[-1]))


@torch.no_grad()
def pgm_ordered_sample(
    model: PartitionTransformer,
    order: torch.Tensor,
    *,
    steps: int,
    batch_size: int = 1,
    temperature: float = 1.0,
    counts: str = "linear",
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """Decode positions in `order` with packed PGM calls; returns (batch, L) tokens.

    Args:
        model: the partition network.
        order: (L,) shared order (e.g. `halton_order`) or (batch, L) per row (e.g.
            `random_order`, which then sets the batch size): permutations of range(L).
        steps: number of network calls (>= 1).
        temperature: softmax temperature (> 0).
        counts: ``"linear"``, ``"cosine"`` or ``"arccos"`` (see `masked_diffusion.reveal_counts`).
        generator: each step draws ``rand(batch, L, V)`` exactly as `ordered_sample`.
    """
    model = _check_model(model)
    n, v = model.cfg.seq_len, model.cfg.vocab_size
    if not isinstance(order, torch.Tensor) or order.ndim not in (1, 2) or order.shape[-1] != n:
        raise ValueError(f"order: expected a ({n},) or (batch, {n}) tensor of positions")
    if order.ndim == 2:
        batch_size = order.shape[0]
    b = _check_positive("batch_size", batch_size)
    order = order.to(device).long().expand(b, n)
    if not torch.equal(order.sort(dim=1).values, torch.arange(n, device=device).expand(b, n)):
        raise ValueError("order: each row must be a permutation of range(length)")
    if not temperature > 0:
        raise ValueError(f"temperature: expected > 0, got {temperature!r}")
    target = reveal_counts(n, _check_positive("steps", steps), _check_counts(counts))
    x = torch.full((b, n), v, dtype=torch.long, device=device)  # v = "not yet generated"
    prev = 0
    for i in range(steps):
        g = torch.rand((b, n, v), generator=generator, device=device)
        if target[i] > prev:
            clean_pos = order[:, :prev]
            query_pos = order[:, prev : target[i]]
            logits = model.forward_packed(x.gather(1, clean_pos), clean_pos, query_pos)
            logp = F.log_softmax(logits.float() / temperature, dim=-1)
            x.scatter_(1, query_pos, gumbel_argmax(logp, _gather_v(g, query_pos)))
        prev = target[i]
    return x


@torch.no_grad()
def pgm_confidence_sample(
    model: PartitionTransformer,
    *,
    steps: int,
    batch_size: int = 1,
    temperature: float = 1.0,
    choice_temperature: float = 0.0,
    counts: str = "cosine",
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """MaskGIT confidence decoding with packed PGM calls; returns (batch, L) tokens.

    At step i every unrevealed position draws a token from ``softmax(logits / temperature)``;
    its confidence is ``log p(token) + choice_temperature (1 - (i+1)/S) Gumbel``; the most
    confident ones are revealed so that ``reveal_counts(L, S, counts)[i]`` are revealed after
    step i (every row reveals the same number, so no padding is needed).
    """
    model = _check_model(model)
    n, v = model.cfg.seq_len, model.cfg.vocab_size
    b = _check_positive("batch_size", batch_size)
    if not temperature > 0:
        raise ValueError(f"temperature: expected > 0, got {temperature!r}")
    if choice_temperature < 0:
        raise ValueError(f"choice_temperature: expected >= 0, got {choice_temperature!r}")
    target = reveal_counts(n, _check_positive("steps", steps), _check_counts(counts))
    x = torch.full((b, n), v, dtype=torch.long, device=device)
    for i in range(steps):
        masked = x == v
        n_masked = n - (target[i - 1] if i else 0)
        # masked positions first (ascending position within each part), then the revealed ones
        order = masked.to(torch.int8).argsort(dim=1, descending=True, stable=True)
        query_pos, clean_pos = order[:, :n_masked], order[:, n_masked:]
        logits = model.forward_packed(x.gather(1, clean_pos), clean_pos, query_pos)
        logp = F.log_softmax(logits.float() / temperature, dim=-1)
        g = torch.rand((b, n, v), generator=generator, device=device)
        draw_q = gumbel_argmax(logp, _gather_v(g, query_pos))
        conf_q = logp.gather(-1, draw_q[..., None]).squeeze(-1)
        u = torch.rand((b, n), generator=generator, device=device)
        anneal = choice_temperature * (1.0 - (i + 1) / steps)
        if anneal > 0:
            gumbel = -torch.log(-torch.log(u.gather(1, query_pos).clamp(1e-20, 1.0 - 1e-7)))
            conf_q = conf_q + anneal * gumbel
        conf = torch.full((b, n), -math.inf, device=device).scatter(1, query_pos, conf_q)
        draw = torch.zeros_like(x).scatter(1, query_pos, draw_q)
        k = n_masked - (n - target[i])
        rank = conf.argsort(dim=1, descending=True).argsort(dim=1)
        x = torch.where(masked & (rank < k), draw, x)
    return x
