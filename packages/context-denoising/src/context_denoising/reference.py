"""Slow, readable reference of the noise score and the CDT perturbation: the tests' oracle.

One sequence at a time, its padding cut off, the loss written out token by token, the
mask and the shift computed in Python loops over the tokens. It follows the paper's
definitions (see `context_denoising.score` and `context_denoising.cdt`) literally:

    CE_b = (1 / |A_b|) sum_{t in A_b} -log p(x_t | x_<t)          (A_b: answer positions)
    g_i  = d CE_b / d e_i                                        (one gradient per token)
    noise_i  <=>  ||g_i||_2 <= (1 / |C_b|) sum_{j in C_b} ||g_j||_2   (C_b: context tokens)
    e_i' = e_i - sigma_i g_i   on noise tokens ("opposite")
    position_i = number of attended tokens before i   (padding never shifts a row)
"""

from __future__ import annotations

import math
from typing import Any

import torch

from context_denoising._checks import IGNORE_INDEX


def sequence_gradient(model: Any, ids: list[int], labels: list[int]) -> torch.Tensor:
    """``d CE / d e`` for ONE unpadded sequence; returns (time, dim)."""
    emb = model.get_input_embeddings()
    x = torch.tensor([ids], device=emb.weight.device)
    e = emb(x).detach().requires_grad_(True)
    logits = model(inputs_embeds=e).logits[0]
    terms = []
    for t in range(1, len(ids)):
        if labels[t] != IGNORE_INDEX:
            logp = torch.log_softmax(logits[t - 1].double(), dim=-1)
            terms.append(-logp[labels[t]])
    ce = torch.stack(terms).sum() / len(terms)
    (g,) = torch.autograd.grad(ce, e)
    return g[0]


def reference_scores(model: Any, batch: dict[str, torch.Tensor], norm: str = "l2") -> torch.Tensor:
    """Per-token scores (batch, time), sequence by sequence; 0 outside the context."""
    ids, labels = batch["input_ids"], batch["labels"]
    attn = batch.get("attention_mask", torch.ones_like(ids))
    ctx = batch.get("context_mask")
    out = torch.zeros(ids.shape, dtype=torch.float64)
    for b in range(ids.shape[0]):
        keep = [t for t in range(ids.shape[1]) if attn[b, t] == 1]
        g = sequence_gradient(
            model, [int(ids[b, t]) for t in keep], [int(labels[b, t]) for t in keep]
        )
        for k, t in enumerate(keep):
            is_ctx = bool(ctx[b, t]) if ctx is not None else int(labels[b, t]) == IGNORE_INDEX
            if not is_ctx:
                continue
            v = [float(c) for c in g[k]]
            out[b, t] = sum(abs(c) for c in v) if norm == "l1" else math.sqrt(sum(c * c for c in v))
    return out


def reference_noise_mask(scores: torch.Tensor, context_mask: torch.Tensor) -> torch.Tensor:
    """``score_i <= mean over the row's context tokens``, by loops."""
    out = torch.zeros(scores.shape, dtype=torch.bool)
    for b in range(scores.shape[0]):
        members = [t for t in range(scores.shape[1]) if context_mask[b, t]]
        mean = sum(float(scores[b, t]) for t in members) / len(members)
        for t in members:
            out[b, t] = float(scores[b, t]) <= mean
    return out


def reference_delta(
    g: torch.Tensor,
    context_mask: torch.Tensor,
    variant: str,
    eps: float | None,
    lr_beta: float,
    signs: str = "loomtrain",
) -> torch.Tensor:
    """The embedding shift of each token, by loops; `lr_beta` is ``lr_t * beta``.

    `context_mask` is the region averaged over and moved. `signs`: ``"other"`` moves the
    large-gradient tokens by ``+sigma g`` (LOOM-Train) or ``-sigma g`` (OpenRLHF).
    """
    norms = torch.linalg.vector_norm(g.double(), dim=-1)
    noise = reference_noise_mask(norms, context_mask)
    delta = torch.zeros_like(g, dtype=torch.float64)
    for b in range(g.shape[0]):
        for t in range(g.shape[1]):
            if not context_mask[b, t]:
                continue
            sigma = eps / (1.0 + float(norms[b, t])) if eps is not None else lr_beta
            if variant == "opposite":
                sign = -1.0 if noise[b, t] else 0.0
            elif variant == "other":
                sign = 0.0 if noise[b, t] else (1.0 if signs == "loomtrain" else -1.0)
            else:  # both
                sign = -1.0 if noise[b, t] else 1.0
            delta[b, t] = sign * sigma * g[b, t].double()
    return delta


def reference_attention_ig(
    attns: list[torch.Tensor],
    grads: list[torch.Tensor],
    labels: torch.Tensor,
    context_mask: torch.Tensor,
    form: str,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention IG score and attention mass by loops, from per-layer ``A`` and ``dL/dA``.

    `attns`, `grads`: the layers averaged over, each (batch, heads, time, time). ``"note"``:
    ``sum_{i in Y} mean_{l,h} A[i, j] |G[i, j]|``; ``"code"``: ``mean_l mean_{i in Y, i != j}
    |sum_h A[i, j] G[i, j]|``. Y: rows i with ``labels[i + 1] != -100``.
    """
    n_b, n_h, n_t, _ = attns[0].shape
    ig = torch.zeros(n_b, n_t, dtype=torch.float64)
    mass = torch.zeros(n_b, n_t, dtype=torch.float64)
    for b in range(n_b):
        rows = [i for i in range(n_t - 1) if int(labels[b, i + 1]) != IGNORE_INDEX]
        for j in range(n_t):
            if not context_mask[b, j]:
                continue
            s = w = 0.0
            for a, g in zip(attns, grads, strict=True):
                for i in rows:
                    pairs = [(float(a[b, h, i, j]), float(g[b, h, i, j])) for h in range(n_h)]
                    if form == "note":
                        s += sum(p * abs(q) for p, q in pairs) / n_h
                        w += sum(p for p, _ in pairs) / n_h
                    elif i != j:
                        s += abs(sum(p * q for p, q in pairs)) / len(rows)
                        w += sum(p for p, _ in pairs) / len(rows)
            ig[b, j], mass[b, j] = s / len(attns), w / len(attns)
    return ig, mass
