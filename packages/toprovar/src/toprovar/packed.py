"""A pruned transformer layer in one gather and one scatter, its attention in the fused kernel.

A policy with one keep set per layer (`PruningPolicy.layer_keep`: ToProVAR, adaptive and
top-k) prunes a layer's attention and MLP at the same tokens. The kept tokens of every row
are then gathered once, flat across the batch (``(T, d)``, T the batch's kept count, no
padding), and both sublayers run on them; the dropped positions take FastVAR's cached
restoration ``x + f_attn + f_mlp`` (each sublayer's last dense output, upsampled), and the
kept ones are written back in one scatter. The sublayer-by-sublayer path
(`toprovar.generation`, ``packed=False``) computes the same sums in the same order (the
kept tokens: ``h = x + y_attn``, ``h + y_mlp``; the dropped ones: ``(x + f_attn) + f_mlp``),
but gathers, scatters and pads twice per layer.

Attention needs the kept queries of each row side by side: they are written once into a
``(B, m, 3 d)`` buffer (m: the row with most kept tokens), whose heads the kernel reads as
strided views. On CPU (float32/float64, the kernel built) `toprovar.fused.masked` takes each
row's query count and key mask, so the padding and the keys a row did not keep (at this and
earlier pruned scales) cost nothing and the entropy comes from the same pass; elsewhere
(CUDA, no kernel) `toprovar.entropy.attend` runs it with the key mask (SDPA without the
entropy).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from toprovar import fused
from toprovar.entropy import attend
from toprovar.model import Block
from toprovar.pruning import PruningPolicy


def cache_key_mask(cache: list[list[Any]]) -> torch.Tensor | None:
    """``(B, n_keys)`` allowed keys of a layer's KV cache (None: all); ``cache[2]`` holds each
    entry's ``(B, n)`` mask or None."""
    if all(m is None for m in cache[2]):
        return None
    parts = [
        m
        if m is not None
        else torch.ones(t.shape[0], t.shape[2], dtype=torch.bool, device=t.device)
        for m, t in zip(cache[2], cache[0], strict=True)
    ]
    return torch.cat(parts, 1)


def row_attention(
    q: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    counts: torch.Tensor | None,
    key_mask: torch.Tensor | None,
    block_size: int,
    want: bool,
    attention: str,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Attention of ``q (B, h, m, dh)`` over a layer's cached ``keys``/``values`` ``(B, h, L,
    dh)``: row b's first ``counts[b]`` queries are real (None: all), ``key_mask (B, L)`` its
    allowed keys (None: all). Returns ``(out (B, h, m, dh), entropy (B, h, m) or None)``."""
    op = None
    if attention == "sdpa" and (counts is not None or key_mask is not None or want):
        op = fused.masked() if fused.applies(q, keys, values, None) else None
    if op is not None:
        out, ent, _ = op(q, keys, values, 1.0 / math.sqrt(q.shape[-1]), counts, key_mask)
        return out, ent if want else None
    mask = None if key_mask is None else key_mask[:, None, None, :]
    return attend(q, keys, values, mask, block_size, want, attention)


def pruned_layer(
    blk: Block,
    x: torch.Tensor,
    mods: tuple[torch.Tensor, ...],
    cache: list[list[Any]],
    policy: PruningPolicy,
    k: int,
    layer: int,
    side: int,
    idx: torch.Tensor,
    block_size: int,
    attention: str,
) -> torch.Tensor:
    """One pruned layer: ``x (B, n, d)`` -> ``(B, n, d)``, at the kept tokens ``idx (B, m)``
    (ascending per row, ``-1``-padded, as `ToProVARPolicy.select` returns them).

    Appends the kept tokens' keys and values (and the row's key mask) to `cache`; hands the
    kept queries' head-mean entropy to ``policy.observe`` when it wants it.
    """
    g1, s1, b1, g2, s2, b2 = (t.squeeze(1) for t in mods)  # (B, d) per-row modulation
    rows, n, d = x.shape
    m = idx.shape[1]
    valid = idx >= 0
    counts = valid.sum(1)
    row_of = torch.repeat_interleave(torch.arange(rows, device=x.device), counts)  # (T,)
    flat = idx[valid] + row_of * n  # kept tokens in (B n) order
    slot = valid.view(-1).nonzero().squeeze(1)  # their places in the padded (B m) layout
    xt = x.reshape(rows * n, d).index_select(0, flat)  # the one gather, (T, d)

    h = blk.norm1(xt) * (1 + s1.index_select(0, row_of)) + b1.index_select(0, row_of)
    qkv = blk.qkv(h)  # (T, 3 d)
    # the kernel never reads the padding (query counts, key mask): no need to zero it
    kernel = attention == "sdpa" and fused.applies(qkv, qkv, qkv, None) and fused.masked()
    padded = (qkv.new_empty if kernel else qkv.new_zeros)(rows * m, qkv.shape[1])
    padded = padded.index_copy_(0, slot, qkv).view(rows, m, -1)
    q, kk, v = (blk.split_heads(t) for t in padded.chunk(3, dim=-1))  # strided views
    cache[0].append(kk)
    cache[1].append(v)
    cache[2].append(valid if bool((~valid).any()) else None)
    keys, values = torch.cat(cache[0], 2), torch.cat(cache[1], 2)
    want = policy.wants_entropy(k, layer)
    out, ent = row_attention(
        q, keys, values, counts, cache_key_mask(cache), block_size, want, attention
    )
    if ent is not None:
        policy.observe(k, layer, ent.mean(1), idx)
    o = out.transpose(1, 2).reshape(rows * m, d).index_select(0, slot)  # (T, d)
    h = xt + blk.proj(o) * g1.index_select(0, row_of)  # the kept tokens after attention
    mlp_in = blk.norm2(h) * (1 + s2.index_select(0, row_of)) + b2.index_select(0, row_of)
    h = h + blk.mlp(mlp_in) * g2.index_select(0, row_of)

    # the dropped positions: the cached restoration of both sublayers
    full = x + policy.fallback(layer, "attn", side)
    full = full + policy.fallback(layer, "mlp", side)
    return full.view(rows * n, d).index_copy_(0, flat, h).view(rows, n, d)  # the one scatter
