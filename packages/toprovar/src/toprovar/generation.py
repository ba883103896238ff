"""Next-scale generation with a KV cache and pruning hooks; MAC counting; ToProVAR calibration.

Sampling: classifier-free guidance as VAR (``logits = (1 + t) l_c - t l_u`` with ``t = cfg
k / (K - 1)`` at scale index k), optional top-k / top-p, then inverse-CDF sampling with
uniforms drawn from a generator seeded by `seed`, one ``(B, n_k)`` draw per scale. Every
method therefore sees the same random numbers: a pruned generation differs from the
unpruned one at the same seed only where its logits moved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from toprovar import _checks
from toprovar.entropy import (
    METHODS,
    attend,
    normalise_entropy,
    pruning_depth,
    scale_sparsity,
    spectral_ratio,
)
from toprovar.fused import cpu_flash_flops
from toprovar.model import Block, TinyVAR
from toprovar.packed import cache_key_mask, pruned_layer, row_attention
from toprovar.pruning import Calibration, PruningPolicy, gather_tokens
from toprovar.vq import MultiScaleVQ


@dataclass
class Generation:
    """What `generate` returns: images ``(B, C, H, W)``, codes per generated scale, logits."""

    images: torch.Tensor
    codes: list[torch.Tensor]
    entropy: dict[tuple[int, int], torch.Tensor] = field(default_factory=dict)


class _Recorder(PruningPolicy):
    """No pruning; keeps the head-mean attention entropy of every (scale, layer)."""

    name = "record"

    def __init__(self) -> None:
        super().__init__()
        self.entropy: dict[tuple[int, int], torch.Tensor] = {}

    def wants_entropy(self, k: int, layer: int) -> bool:
        return True

    def observe(
        self, k: int, layer: int, entropy: torch.Tensor, idx: torch.Tensor | None = None
    ) -> None:
        self.entropy[(k, layer)] = entropy


def _filter(logits: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    if top_k > 0 and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if 0.0 < top_p < 1.0:
        srt, order = logits.sort(-1, descending=True)
        cum = srt.softmax(-1).cumsum(-1)
        drop = cum - srt.softmax(-1) > top_p  # keep the smallest prefix reaching top_p
        logits = logits.masked_fill(torch.zeros_like(drop).scatter(-1, order, drop), float("-inf"))
    return logits


def _per_token(
    fn: Callable[[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]], torch.Tensor],
    t: torch.Tensor,
    valid: torch.Tensor | None,
) -> torch.Tensor:
    """``fn(tokens, row)`` on the valid tokens of ``t (B, m, d)`` only, flattened across the
    batch, so that padding (rows keeping fewer tokens than the batch's most) costs nothing;
    ``row(p)`` lines a per-row ``(B, 1, d)`` parameter up with those tokens."""
    if valid is None:
        return fn(t, lambda p: p)
    m = t.shape[1]
    flat = fn(t[valid], lambda p: p.expand(-1, m, -1)[valid])
    out = flat.new_zeros(*t.shape[:2], flat.shape[-1])
    out[valid] = flat
    return out


def _block_step(
    blk: Block,
    x: torch.Tensor,
    mods: tuple[torch.Tensor, ...],
    cache: list[list[Any]],
    policy: PruningPolicy,
    k: int,
    layer: int,
    side: int,
    block_size: int,
    attention: str,
    packed: bool,
) -> torch.Tensor:
    g1, s1, b1, g2, s2, b2 = mods
    idx = policy.select(k, layer, "attn", x, side)
    if idx is not None and packed and policy.layer_keep:
        out = pruned_layer(blk, x, mods, cache, policy, k, layer, side, idx, block_size, attention)
        policy.select(k, layer, "mlp", x, side)  # the same tokens (layer_keep); clears its state
        return out
    # padding (idx < 0: images keeping fewer tokens than the batch's most): masked keys
    valid = None if idx is None or not bool((idx < 0).any()) else idx >= 0
    xs = gather_tokens(x, idx)
    qkv = _per_token(lambda t, row: blk.qkv(blk.norm1(t) * (1 + row(s1)) + row(b1)), xs, valid)
    q, kk, v = (blk.split_heads(t) for t in qkv.chunk(3, dim=-1))
    cache[0].append(kk)
    cache[1].append(v)
    cache[2].append(valid)
    keys, values = torch.cat(cache[0], 2), torch.cat(cache[1], 2)
    key_mask = cache_key_mask(cache)
    want = policy.wants_entropy(k, layer)
    if packed:  # masked keys (earlier pruned scales) stay in the fused kernel
        out, ent = row_attention(q, keys, values, None, key_mask, block_size, want, attention)
    else:
        mask = None if key_mask is None else key_mask[:, None, None, :]
        out, ent = attend(q, keys, values, mask, block_size, want, attention)
    if ent is not None:
        policy.observe(k, layer, ent.mean(1), idx)
    o = out.transpose(1, 2).reshape(out.shape[0], out.shape[2], -1)
    y = _per_token(lambda t, row: blk.proj(t) * row(g1), o, valid)
    x = x + policy.restore(layer, "attn", y, idx, side)
    idx = policy.select(k, layer, "mlp", x, side)
    valid = None if idx is None or not bool((idx < 0).any()) else idx >= 0
    y = _per_token(
        lambda t, row: blk.mlp(blk.norm2(t) * (1 + row(s2)) + row(b2)) * row(g2),
        gather_tokens(x, idx),
        valid,
    )
    return x + policy.restore(layer, "mlp", y, idx, side)


@torch.no_grad()
def generate(
    var: TinyVAR,
    vq: MultiScaleVQ,
    labels: torch.Tensor,
    policy: PruningPolicy | None = None,
    cfg: float = 1.5,
    top_k: int = 0,
    top_p: float = 0.0,
    seed: int = 0,
    block_size: int = 128,
    attention: str = "sdpa",
    packed: bool = True,
) -> Generation:
    """Generate images of classes `labels` ``(B,)`` under a pruning `policy` (None: unpruned).

    `attention` is `attention_with_entropy`'s method: ``"sdpa"`` (fast), ``"chunked"`` or
    ``"blockwise"``
    (the paper's Flash-Attention-Entropy; its entropy adds no product, so `count_macs` under it
    counts the model's MACs only).

    `packed` (default): a pruned layer of a policy with one keep set per layer (ToProVAR,
    adaptive and top-k) runs in one gather and one scatter, its attention in the fused
    kernel with each row's query count and key mask (`toprovar.packed`); False: 0.4.0's
    sublayer-by-sublayer path (the same numbers up to rounding; kept for comparison).

    Returns a `Generation`; ``images`` are the decoder's output (about [-1, 1]).
    """
    _checks.tensor("labels", labels, 1)
    if labels.dtype != torch.long:
        raise TypeError(f"labels: expected int64 class indices, got dtype {labels.dtype}")
    if len(labels) and (int(labels.min()) < 0 or int(labels.max()) >= var.num_classes):
        raise ValueError(
            f"labels: expected classes in 0..{var.num_classes - 1}, got "
            f"{int(labels.min())}..{int(labels.max())}"
        )
    if attention not in METHODS:
        raise ValueError(f"attention: expected one of {METHODS}, got {attention!r}")
    cfg = _checks.number("cfg", cfg, 0.0)
    if not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k: expected an int >= 0 (0: off), got {top_k!r}")
    _checks.number("top_p", top_p, 0.0, 1.0)
    if tuple(var.scales) != tuple(vq.scales) or var.vocab != vq.vocab:
        raise ValueError(
            f"var, vq: expected the same scales and vocab, got {var.scales}/{var.vocab} and "
            f"{vq.scales}/{vq.vocab}"
        )
    policy = policy or PruningPolicy()
    policy.check_scales(len(var.scales))
    guided = cfg > 0
    policy.reset(copies=2 if guided else 1)
    device = labels.device
    b = len(labels)
    n_scales = len(var.scales)
    lab = torch.cat([labels, torch.full_like(labels, var.num_classes)]) if guided else labels
    cond = var.condition(lab)
    blocks = var.block_list()
    mods = [blk.modulation(cond) for blk in blocks]
    caches: list[list[list[Any]]] = [[[], [], []] for _ in blocks]
    gen = torch.Generator().manual_seed(seed)
    f_hat = torch.zeros(b, vq.latent, vq.side, vq.side, device=device)
    codes: list[torch.Tensor] = []
    tokens: torch.Tensor | None = None
    for k, side in enumerate(var.scales):
        u = torch.rand(b, side * side, generator=gen, dtype=torch.float64).to(device)
        if policy.skip_scale(k, n_scales):
            break
        x = var.embed(tokens if tokens is not None else cond, k, cond)
        for layer, blk in enumerate(blocks):
            x = _block_step(
                blk, x, mods[layer], caches[layer], policy, k, layer, side, block_size,
                attention, packed,
            )  # fmt: skip
        logits = var.head_logits(x, cond).double()
        if guided:
            t = cfg * k / max(1, n_scales - 1)
            logits = (1 + t) * logits[:b] - t * logits[b:]
        probs = _filter(logits, top_k, top_p).softmax(-1)
        cdf = probs.cumsum(-1)
        idx = torch.searchsorted(cdf, (u * cdf[..., -1]).unsqueeze(-1)).squeeze(-1)
        idx = idx.clamp(max=var.vocab - 1)
        codes.append(idx)
        f_hat = f_hat + vq._up(vq.codes_to_map(idx, k), k)
        if k + 1 < n_scales:
            nxt = vq.downsample(f_hat, k + 1)
            tokens = torch.cat([nxt, nxt]) if guided else nxt
    images = vq.decode(f_hat)
    return Generation(images=images, codes=codes)


# torch's CPU flash-attention op (used by F.scaled_dot_product_attention on CPU and by the
# "sdpa" entropy path) got a FLOP formula only in torch 2.15; torch 2.13's counter counts it as
# 0. Our own formula makes `count_macs` the same on every supported torch.
_FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_CUSTOM_FLOPS = {} if _FLASH_CPU is None else {_FLASH_CPU: cpu_flash_flops}


def count_macs(fn: object, *args: object, **kwargs: object) -> tuple[object, int]:
    """Run ``fn(*args, **kwargs)`` under `torch.utils.flop_counter.FlopCounterMode`; ``(result, MACs)``.

    MACs = counted FLOPs / 2 (matmuls, linears, convolutions, attention products). torch's
    fused CPU attention op is counted with our own formula (``n_q n_k (d + d_v)`` MACs per
    head), so the count does not depend on the torch version's FLOP registry.
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a callable, got {type(fn).__name__}")
    with FlopCounterMode(display=False, custom_mapping=_CUSTOM_FLOPS) as counter:
        result = fn(*args, **kwargs)
    return result, counter.get_total_flops() // 2


@torch.no_grad()
def calibrate(
    var: TinyVAR,
    vq: MultiScaleVQ,
    labels: torch.Tensor,
    tau: float | None = 0.5,
    beta: float | None = None,
    dense_layers: int = 1,
    min_depth: int = 2,
    cfg: float = 1.5,
    seed: int = 0,
    prune_share: float = 0.9,
) -> Calibration:
    """ToProVAR's offline statistics from unpruned generations of `labels` (the calibration set).

    - ``rho_s``: mean over layers and samples (conditional rows) of the below-mean share;
      ``D = max(min_depth, min{s : rho_s >= tau}) `` (the top-k option's fixed depth). Per
      image, ``rho_images`` from the source layers, as the adaptive policy computes it online.
    - ``tau=None``: calibrated by this pre-sampling so that a share `prune_share` of the
      calibration images reach ``rho_s >= tau`` at some prunable scale (``s >= min_depth``):
      the ``1 - prune_share`` quantile of each image's largest such ``rho_s``.
    - ``varrho_{l,s}``: spectral ratio of each sample's entropy map; ``beta`` (None: chosen so
      that the median (layer, scale) gets R = 1/2, i.e. ``ln 2 / median(varrho - 1)``);
      ``R_{l,s}`` = mean over samples of ``exp(-beta (varrho - 1))``.
    - the source entropy (mean of the first `dense_layers` layers), normalised per sample.
    """
    if tau is not None:
        _checks.number("tau", tau, 0.0, 1.0)
    _checks.number("prune_share", prune_share, 0.0, 1.0)
    _checks.positive_int("dense_layers", dense_layers)
    if dense_layers > var.depth:
        raise ValueError(f"dense_layers: expected <= depth={var.depth}, got {dense_layers}")
    _checks.positive_int("min_depth", min_depth)
    if min_depth < 2:
        raise ValueError(
            f"min_depth: expected >= 2 (scale 1 has no earlier scale), got {min_depth}"
        )
    rec = _Recorder()
    generate(var, vq, labels, rec, cfg=cfg, seed=seed)
    n_scales, depth, b = len(var.scales), var.depth, len(labels)
    rho = torch.zeros(n_scales, dtype=torch.float64)
    rho_images = torch.zeros(b, n_scales, dtype=torch.float64)
    varrho = torch.full((depth, n_scales), float("nan"), dtype=torch.float64)
    per_sample: dict[tuple[int, int], torch.Tensor] = {}
    source: list[torch.Tensor] = []
    for k, side in enumerate(var.scales):
        ents = [rec.entropy[(k, layer)][:b] for layer in range(depth)]
        rho[k] = torch.stack([scale_sparsity(e).mean() for e in ents]).mean()
        raw = torch.stack(ents[:dense_layers]).mean(0)
        rho_images[:, k] = scale_sparsity(raw).cpu()
        source.append(normalise_entropy(raw).cpu())
        if side >= 2:
            for layer, e in enumerate(ents):
                r = spectral_ratio(e.reshape(b, side, side))
                per_sample[(layer, k)] = r
                varrho[layer, k] = r.mean()
    if beta is None:
        excess = torch.cat([r - 1.0 for r in per_sample.values()])
        med = float(excess.median()) if len(excess) else 1.0
        beta = float(torch.log(torch.tensor(2.0))) / max(med, 1e-12)
    _checks.number("beta", beta, 0.0)
    score = torch.full((depth, n_scales), float("nan"), dtype=torch.float64)
    for (layer, k), r in per_sample.items():
        score[layer, k] = torch.exp(-beta * (r - 1.0)).mean()
    if tau is None:
        prunable = rho_images[:, min(min_depth, n_scales) - 1 :].amax(1)
        tau = float(torch.quantile(prunable, 1.0 - prune_share))
    d = max(min_depth, pruning_depth(rho, tau))
    return Calibration(
        rho=rho,
        depth=d,
        varrho=varrho,
        score=score,
        beta=float(beta),
        tau=tau,
        dense_layers=dense_layers,
        source=source,
        min_depth=min_depth,
        rho_images=rho_images,
    )
