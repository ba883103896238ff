"""Reference attributions from Captum: true Integrated Gradients and plain Saliency.

The paper calls its score "Integrated Gradients" but computes ONE gradient at the input
(`context_denoising.score`). For users who want the path integral, `integrated_gradients`
runs Captum's IG on the input embeddings with Captum's defaults (the paper's code has no IG
baseline or step count; we use the zero-embedding baseline, 50 Gauss-Legendre steps):

    IG_i = (e_i - e'_i) . int_0^1 dF(e' + a (e - e')) / d e_i da,     F = CE(answer),

summed over the embedding dimension to one number per token; completeness says
``sum_i IG_i = F(e) - F(e')`` up to the quadrature error Captum reports as ``delta``.
Needs the ``captum`` extra.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from context_denoising._checks import check_batch
from context_denoising.score import forward, scoring_context, sequence_ce, unwrap, vocab_size


def _captum() -> Any:
    from shared_core.data import require_extra

    require_extra("context-denoising", "captum", "captum", "Captum's references", in_root=False)
    import captum.attr

    return captum.attr


def _forward(model: Any) -> Any:
    def f(e: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        mask = {"attention_mask": attention_mask}  # positions from the mask, as everywhere
        logits = forward(model, mask, inputs_embeds=e).logits
        return sequence_ce(logits, labels)  # (batch,): one output per sequence

    return f


def saliency(model: Any, batch: Mapping[str, Any]) -> torch.Tensor:
    """Captum `Saliency` (``abs=False``) of CE(answer) w.r.t. the embeddings, (batch, time, dim)."""
    base = unwrap(model)
    checked = check_batch(batch, vocab_size(base))
    with torch.no_grad():
        e = base.get_input_embeddings()(checked["input_ids"])
    sal = _captum().Saliency(_forward(base))
    with scoring_context(base, e.device):
        out = sal.attribute(
            e, abs=False, additional_forward_args=(checked["attention_mask"], checked["labels"])
        )
    return out.detach()


def integrated_gradients(
    model: Any,
    batch: Mapping[str, Any],
    *,
    n_steps: int = 50,
    baseline: str = "zero",
    internal_batch_size: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(per-token IG (batch, time), convergence delta (batch,))`` from Captum.

    `baseline`: ``"zero"`` (all-zero embeddings) or ``"pad"`` (no other choice: the
    embedding of token 0). Non-context tokens keep their attribution (completeness is over
    ALL tokens); mask with ``batch["context_mask"]`` to compare with the noise score.
    """
    if not isinstance(n_steps, int) or isinstance(n_steps, bool) or n_steps < 1:
        raise ValueError(f"n_steps: expected a positive int, got {n_steps!r}")
    if baseline not in ("zero", "pad"):
        raise ValueError(f"baseline: expected 'zero' or 'pad', got {baseline!r}")
    base = unwrap(model)
    checked = check_batch(batch, vocab_size(base))
    emb = base.get_input_embeddings()
    with torch.no_grad():
        e = emb(checked["input_ids"])
        ref = (
            torch.zeros_like(e)
            if baseline == "zero"
            else emb(torch.zeros_like(checked["input_ids"]))
        )
    ig = _captum().IntegratedGradients(_forward(base))
    with scoring_context(base, e.device):
        attr, delta = ig.attribute(
            e,
            baselines=ref,
            additional_forward_args=(checked["attention_mask"], checked["labels"]),
            n_steps=n_steps,
            internal_batch_size=internal_batch_size,
            return_convergence_delta=True,
        )
    return attr.sum(dim=-1).detach(), delta.detach()
