"""The paper's attention-based IG score, the manual-denoising analysis, and rank correlation.

**IG score** (paper Sec. 3, "IG Score"; note: "Integrated Gradient (IG) score"). For layer l,
head h, attention ``A_{h,l}`` (query i attends to key j, shape (T, T)) and the answer's loss
``L = CE(answer)``:

- ``form="note"`` (the paper's equation): ``IG_{h,l} = A_{h,l} * |dL / dA_{h,l}|``, averaged over
  heads and layers; the score of key token j sums its contributions to every answer output:
  ``s_j = sum_{i in Y} mean_{h,l} IG_{h,l}[i, j]``.
- ``form="code"`` (the authors' ``AttentionAdapter.saliency`` + ``AttentionerManager.grad_process``
  and ``calculate_portions`` in preliminary/src/utils.py): per layer ``S_l = |sum_h A_{h,l} *
  dL/dA_{h,l}|`` (the SIGNED product summed over heads, then abs), the diagonal zeroed,
  ``s_j = mean_l mean_{i in Y} S_l[i, j]`` over the layers from `start_layer` (test_score.py
  tracks layers 24-31 of 32).

``Y`` are the rows that predict answer tokens (i with ``labels[i + 1] != -100``). The same
pass returns the attention mass of the same rows (``form="note"``: mean over heads and
layers; ``"code"``: the code's ``weight`` score, the sum over heads, mean over layers).

A and ``dL/dA`` come from the eager attention path (``output_attentions=True`` returns the
probabilities the layer multiplies the values with, so ``torch.autograd.grad`` reaches them);
the model is switched to eager for the pass and back, nothing else is modified. The pass
takes a prepared 4-D mask (`eager_mask`): the model's own one leaves a left-padded row's
padded queries with no key at all, and eager attention (softmax in float32 over
``finfo(float64).min`` = -inf) turns them into NaN, which reaches every value, loss and
gradient of the row through ``0 * NaN``; `eager_mask` lets such a query attend to itself, so
it stays finite and, never attended to, changes nothing else. The
training-time proxy the paper argues is proportional to this score (Appendix C) is the
embedding-gradient norm `context_denoising.noise_score`; `rank_correlation` measures it.

**Manual denoising** (paper Sec. 3, "Manual Context Denoising"; the authors' ``ZeroEmbedAdapter``
with ``factor = 0.1`` in ``test_model_with_adapter``): ``E' = E - 0.1 * dL/dE`` on every token
OUTSIDE the supporting and interference spans, then the evidence's attention and IG share are
measured again (`manual_denoising` gives the shift; pass it to `attention_ig` as `delta`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import torch

from context_denoising._checks import IGNORE_INDEX, check_batch, check_choice, check_number
from context_denoising.score import (
    embedding_gradients,
    embedding_hook,
    forward,
    no_ddp_sync,
    scoring_context,
    sequence_ce,
    unwrap,
    vocab_size,
)

FORMS = ("note", "code")


class AttentionIG(NamedTuple):
    """Per-token scores of `attention_ig`, each (batch, time), 0 outside the context."""

    ig: torch.Tensor  # the IG score of each key token
    attention: torch.Tensor  # the attention mass the answer rows put on it


@contextlib.contextmanager
def eager_attention(model: Any) -> Iterator[None]:
    """Run `model` on the eager attention path (A materialised), then restore its setting."""
    before = getattr(model.config, "_attn_implementation", None)
    if before == "eager":
        yield
        return
    model.set_attn_implementation("eager")
    try:
        yield
    finally:
        model.set_attn_implementation(before)


def eager_mask(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The additive causal + padding mask of eager attention, (batch, 1, time, time).

    0 where query i may attend key j (``j <= i`` and j attended), ``finfo(dtype).min``
    elsewhere, except that a query with no such key (a left-padded row's padding) attends to
    itself: every softmax row keeps a finite entry. Rows with a key are the model's own.
    """
    keys = attention_mask.bool()  # (batch, time)
    t = keys.shape[1]
    causal = torch.ones(t, t, dtype=torch.bool, device=keys.device).tril()
    allowed = causal & keys[:, None, :]  # (batch, query, key)
    empty = ~allowed.any(dim=-1, keepdim=True)
    allowed |= empty & torch.eye(t, dtype=torch.bool, device=keys.device)
    bias = torch.zeros(allowed.shape, dtype=dtype, device=keys.device)
    return bias.masked_fill(~allowed, torch.finfo(dtype).min)[:, None]


def answer_rows(labels: torch.Tensor) -> torch.Tensor:
    """(batch, time) bool: row i predicts an answer token (``labels[:, i + 1] != -100``)."""
    rows = torch.zeros_like(labels, dtype=torch.bool)
    rows[:, :-1] = labels[:, 1:] != IGNORE_INDEX
    return rows


def attention_ig(
    model: Any,
    batch: Mapping[str, Any],
    *,
    form: str = "note",
    start_layer: int = 0,
    delta: torch.Tensor | None = None,
) -> AttentionIG:
    """The attention IG score and attention mass of every context token, (batch, time) each.

    Args:
        model: a `transformers` causal LM with an eager attention path (Llama, GPT-2, ...).
        batch: as in `check_batch`.
        form: ``"note"`` (``A * |dL/dA|``, mean over heads) or ``"code"`` (``|sum_h A * dL/dA|``).
        start_layer: the first layer averaged over (the code's ``start_layer``).
        delta: an optional shift of the input embeddings, (batch, time, dim)
            (`manual_denoising`).
    """
    check_choice("form", form, FORMS)
    base = unwrap(model)
    checked = check_batch(batch, vocab_size(base))
    n_layers = int(base.config.num_hidden_layers)
    if isinstance(start_layer, bool) or not isinstance(start_layer, int):
        raise TypeError(f"start_layer: expected an int, got {type(start_layer).__name__}")
    if not 0 <= start_layer < n_layers:
        raise ValueError(f"start_layer: expected 0 <= start_layer < {n_layers}, got {start_layer}")
    ids = checked["input_ids"]
    emb = base.get_input_embeddings()
    dtype = emb.weight.dtype
    shape = (*ids.shape, int(getattr(emb, "embedding_dim", emb.weight.shape[-1])))
    if delta is not None:
        if not isinstance(delta, torch.Tensor) or tuple(delta.shape) != shape:
            raise ValueError(
                f"delta: expected a tensor of shape {shape}, got {getattr(delta, 'shape', delta)!r}"
            )
        if not bool(torch.isfinite(delta).all()):
            raise ValueError("delta: expected finite values, got NaN or inf")
    shift = (lambda e: e) if delta is None else (lambda e: e + delta.to(e.dtype))
    with contextlib.ExitStack() as stack:
        stack.enter_context(eager_attention(base))
        stack.enter_context(scoring_context(base, ids.device))
        stack.enter_context(torch.enable_grad())
        stack.enter_context(no_ddp_sync(model))
        stack.enter_context(embedding_hook(model, shift))
        mask = eager_mask(checked["attention_mask"], dtype)
        out = forward(model, checked, attention_mask=mask, input_ids=ids, output_attentions=True)
        loss = sequence_ce(out.logits, checked["labels"]).sum()
        attns = tuple(out.attentions[start_layer:])  # each (batch, heads, time, time)
        grads = torch.autograd.grad(loss, attns)
    rows = answer_rows(checked["labels"]).to(dtype)  # (batch, time)
    ig = torch.zeros_like(rows)
    mass = torch.zeros_like(rows)
    eye = torch.eye(ids.shape[1], dtype=torch.bool, device=ids.device)
    for a, g in zip(attns, grads, strict=True):
        a, g = a.detach(), g.detach()
        if form == "note":
            ig += torch.einsum("bi,bij->bj", rows, (a * g.abs()).mean(dim=1))
            mass += torch.einsum("bi,bij->bj", rows, a.mean(dim=1))
        else:
            s = (a * g).sum(dim=1).abs().masked_fill(eye, 0.0)  # (batch, time, time)
            w = a.sum(dim=1).masked_fill(eye, 0.0)
            count = rows.sum(dim=1, keepdim=True)
            ig += torch.einsum("bi,bij->bj", rows, s) / count
            mass += torch.einsum("bi,bij->bj", rows, w) / count
    context = checked["context_mask"].to(dtype)
    ig, mass = ig / len(attns) * context, mass / len(attns) * context
    if not (bool(torch.isfinite(ig).all()) and bool(torch.isfinite(mass).all())):
        raise FloatingPointError(
            f"attention_ig: NaN or inf in the scores (the attention or its gradient overflowed "
            f"in {dtype}); got {int((~torch.isfinite(ig)).sum())} non-finite IG values"
        )
    return AttentionIG(ig, mass)


def manual_denoising(
    model: Any, batch: Mapping[str, Any], keep: torch.Tensor, factor: float = 0.1
) -> torch.Tensor:
    """The shift ``-factor * dL/dE`` on every attended token outside `keep`, (batch, time, dim).

    `keep` (batch, time) bool: the supporting and interference spans (the code's
    ``nonzero_poss``), which stay as they are. ``factor = 0.1`` is the code's.
    """
    check_number("factor", factor)
    _, g, checked = embedding_gradients(model, batch)
    if not isinstance(keep, torch.Tensor) or keep.dtype != torch.bool:
        raise TypeError("keep: expected a bool tensor")
    if keep.shape != g.shape[:2]:
        raise ValueError(f"keep: expected shape {tuple(g.shape[:2])}, got {tuple(keep.shape)}")
    moved = checked["attention_mask"].bool() & ~keep
    return -factor * g * moved.unsqueeze(-1).to(g.dtype)


def rank_correlation(x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Spearman's rank correlation of `x` and `y` over each row's `mask`, (batch, time) -> (batch,).

    Ranks by sorting (ties broken by position); rows with fewer than 2 members give NaN.
    """
    if x.shape != y.shape or x.shape != mask.shape or x.ndim != 2:
        raise ValueError(
            f"x, y, mask: expected equal (batch, time) shapes, got {tuple(x.shape)}, "
            f"{tuple(y.shape)}, {tuple(mask.shape)}"
        )
    out = []
    for xr, yr, m in zip(x.double(), y.double(), mask, strict=True):
        a, b = xr[m], yr[m]
        if a.numel() < 2:
            out.append(torch.tensor(float("nan"), dtype=torch.float64))
            continue
        ra = a.argsort().argsort().double()
        rb = b.argsort().argsort().double()
        ra, rb = ra - ra.mean(), rb - rb.mean()
        out.append((ra * rb).sum() / (ra.norm() * rb.norm()))
    return torch.stack(out)
