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
the model is switched to eager for the pass and back, nothing else is modified. The
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
    forward,
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
    with torch.no_grad():
        e = base.get_input_embeddings()(ids)
    if delta is not None:
        if not isinstance(delta, torch.Tensor) or delta.shape != e.shape:
            raise ValueError(
                f"delta: expected a tensor of shape {tuple(e.shape)}, got {getattr(delta, 'shape', delta)!r}"
            )
        if not bool(torch.isfinite(delta).all()):
            raise ValueError("delta: expected finite values, got NaN or inf")
        e = e + delta.to(e.dtype)
    with eager_attention(base), scoring_context(base, ids.device), torch.enable_grad():
        out = forward(base, checked, inputs_embeds=e, output_attentions=True)
        loss = sequence_ce(out.logits, checked["labels"]).sum()
        attns = tuple(out.attentions[start_layer:])  # each (batch, heads, time, time)
        grads = torch.autograd.grad(loss, attns)
    rows = answer_rows(checked["labels"]).to(e.dtype)  # (batch, time)
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
    ctx = checked["context_mask"].to(e.dtype)
    return AttentionIG(ig / len(attns) * ctx, mass / len(attns) * ctx)


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
