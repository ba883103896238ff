"""The gradient noise score of context tokens (the paper's proxy for its IG score) and the mask.

For a causal LM with input embeddings ``e_i = E[x_i]`` and the answer's cross-entropy
``CE(answer)`` (mean over the answer tokens of one sequence), the score of context token i is
a norm of one gradient, not a path integral:

    g_i = d CE(answer) / d e_i,     s_i = ||g_i||_1 (the analysis code) or ||g_i||_2 (the trainer)

This is the embedding-gradient proxy the paper argues is proportional to its attention-based
IG score (Appendix C; the IG score itself is `context_denoising.attention_ig`). A context
token is *noise* when ``||g_i||_2 <= mean_j ||g_j||_2`` over the context tokens j of the same
sequence (the trainer's ``has_large_grad = l2_grad > avg_grad``, negated).

`embedding_gradients` computes ``g`` for a whole batch with ONE forward and ONE backward pass
through ``torch.autograd.grad``: only the embeddings are differentiated, so no parameter's
``.grad`` is written and the weight-gradient matmuls are skipped; the RNG (dropout) is
forked, so the caller's random stream is as if the pass had not run; LoRA adapters of a
`peft` model are disabled during the pass (the trainer scores with the base model).
The pass goes through the model as given (a DDP / FSDP / DeepSpeed wrapper included, whose
forward gathers sharded weights): a forward hook on the input-embedding module swaps its
output for a leaf (`embedding_hook`), so nothing runs the inner model around its wrapper.
Each sequence's loss is its own mean CE, summed over the batch, so a sequence's score does
not depend on the other rows of the batch (the trainer's batch-token mean rescales row b by
``N_b / N``; the two agree at batch size 1).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
import torch.nn.functional as F

from context_denoising._checks import IGNORE_INDEX, NORMS, check_batch, check_choice


def unwrap(model: Any) -> Any:
    """The module under a DDP wrapper (`fit` may pass one), else the model itself."""
    return getattr(model, "module", model)


@contextlib.contextmanager
def embedding_hook(model: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Iterator[None]:
    """Inside, every forward of `model` replaces its input embeddings ``e`` (batch, time, dim)
    with ``fn(e)``: the embedding module is the inner model's, the forward the wrapper's."""
    handle = (
        unwrap(model)
        .get_input_embeddings()
        .register_forward_hook(lambda _module, _args, out: fn(out))
    )
    try:
        yield
    finally:
        handle.remove()


@contextlib.contextmanager
def no_ddp_sync(model: Any) -> Iterator[None]:
    """DDP's ``no_sync`` for a pass whose backward never reaches the parameters (a DDP forward
    with gradients on otherwise waits for a reduction that never comes); else nothing."""
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        with model.no_sync():
            yield
    else:
        yield


def _is_peft(model: Any) -> bool:
    return type(model).__module__.split(".")[0] == "peft" and hasattr(model, "disable_adapter")


@contextlib.contextmanager
def scoring_context(model: Any, device: torch.device) -> Iterator[None]:
    """Adapters off (peft) and a forked RNG: the scoring pass leaves no trace."""
    devices = [device] if device.type == "cuda" else []
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.random.fork_rng(devices=devices, device_type=device.type))
        if _is_peft(model):
            stack.enter_context(model.disable_adapter())
        yield


def vocab_size(model: Any) -> int:
    """Rows of the model's input embedding matrix."""
    emb = unwrap(model).get_input_embeddings()
    return int(emb.weight.shape[0])


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for half-precision logits (a stable log-softmax), float64 stays float64."""
    return x if x.dtype == torch.float64 else x.float()


def sequence_ce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-sequence mean cross-entropy of the answer tokens, shape (batch,).

    `labels` are unshifted (token t is predicted from position t - 1), ``-100`` elsewhere.
    """
    shift_logits = _wide(logits[:, :-1])
    shift_labels = labels[:, 1:]
    nll = F.cross_entropy(
        shift_logits.transpose(1, 2), shift_labels, ignore_index=IGNORE_INDEX, reduction="none"
    )  # (batch, time - 1)
    count = (shift_labels != IGNORE_INDEX).sum(dim=1)
    return nll.sum(dim=1) / count


def lm_loss(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """The standard SFT loss: CE over every answer token of the batch (``"mean"`` or ``"sum"``)."""
    check_choice("reduction", reduction, ("mean", "sum"))
    shift_logits = _wide(logits[:, :-1])
    return F.cross_entropy(
        shift_logits.transpose(1, 2), labels[:, 1:], ignore_index=IGNORE_INDEX, reduction=reduction
    )


def position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions counted over the attended tokens, (batch, time) -> (batch, time) int64.

    ``cumsum(mask) - 1`` clamped at 0 (LOOM-Train's ``mask2position``): a left-padded row gets
    the positions it would have alone, so learned absolute positions (GPT-2) score it the same.
    """
    return (attention_mask.long().cumsum(-1) - 1).clamp_min(0)


def forward(
    model: Any,
    checked: Mapping[str, torch.Tensor],
    *,
    attention_mask: torch.Tensor | None = None,
    **kwargs: Any,
) -> Any:
    """``model(attention_mask=..., position_ids=..., **kwargs)``: every forward of the package.

    `attention_mask` replaces the batch's (batch, time) mask in the call (a prepared 4-D mask,
    `context_denoising.ig.eager_mask`); positions always come from the batch's mask.
    """
    mask = checked["attention_mask"]
    given = mask if attention_mask is None else attention_mask
    return model(attention_mask=given, position_ids=position_ids(mask), **kwargs)


def embedding_gradients(
    model: Any, batch: Mapping[str, Any], *, require_context: bool = True
) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """``(e, g, checked)``: input embeddings (detached), ``g = d sum_b CE_b / d e`` and the batch.

    Shapes ``(batch, time, dim)``; `checked` is the validated batch with defaults filled in
    (`check_batch`; `require_context` = every row needs a context token). Parameters'
    gradients, the optimiser and the RNG are left untouched; gradients are enabled even
    under ``torch.no_grad()`` (a Trainer's evaluation loop).
    """
    base = unwrap(model)
    checked = check_batch(batch, vocab_size(base), require_context=require_context)
    ids = checked["input_ids"]
    leaves: list[torch.Tensor] = []

    def capture(e: torch.Tensor) -> torch.Tensor:
        leaves.append(e.detach().requires_grad_(True))
        return leaves[-1]

    with contextlib.ExitStack() as stack:
        stack.enter_context(scoring_context(base, ids.device))
        stack.enter_context(torch.enable_grad())
        stack.enter_context(no_ddp_sync(model))
        stack.enter_context(embedding_hook(model, capture))
        logits = forward(model, checked, input_ids=ids).logits
        loss = sequence_ce(logits, checked["labels"]).sum()
        (g,) = torch.autograd.grad(loss, leaves[0])
    return leaves[0].detach(), g.detach(), checked


def token_norms(g: torch.Tensor, norm: str = "l2") -> torch.Tensor:
    """``||g_i||`` per token, (batch, time, dim) -> (batch, time), in float32 or wider."""
    check_choice("norm", norm, NORMS)
    g = g if g.dtype in (torch.float32, torch.float64) else g.float()
    return g.abs().sum(dim=-1) if norm == "l1" else torch.linalg.vector_norm(g, dim=-1)


def noise_score(model: Any, batch: Mapping[str, Any], norm: str = "l2") -> torch.Tensor:
    """The noise score ``||d CE(answer)/d e_i||`` of every token, (batch, time).

    Non-context positions (answer, padding, or outside `context_mask`) are 0. A LOW score
    marks noise; the supporting evidence should score high.
    """
    check_choice("norm", norm, NORMS)
    _, g, checked = embedding_gradients(model, batch)
    return token_norms(g, norm) * checked["context_mask"]


def noise_mask(scores: torch.Tensor, context_mask: torch.Tensor) -> torch.Tensor:
    """Noise tokens: ``score_i <= mean`` of the scores over each row's context tokens.

    Args:
        scores: (batch, time) per-token scores (``||g_i||_2`` in CDT).
        context_mask: (batch, time) bool; every row needs at least one context token.
    Returns:
        (batch, time) bool, False outside the context.
    """
    if not isinstance(scores, torch.Tensor) or scores.ndim != 2:
        raise ValueError(
            f"scores: expected a (batch, time) tensor, got {getattr(scores, 'shape', scores)!r}"
        )
    if not isinstance(context_mask, torch.Tensor) or context_mask.dtype != torch.bool:
        raise TypeError("context_mask: expected a bool tensor")
    if context_mask.shape != scores.shape:
        raise ValueError(
            f"context_mask: expected the shape of scores {tuple(scores.shape)}, got {tuple(context_mask.shape)}"
        )
    count = context_mask.sum(dim=1, keepdim=True)
    if bool((count == 0).any()):
        raise ValueError("context_mask: every row needs at least one context token")
    if bool(torch.isnan(scores[context_mask]).any()):
        raise ValueError("scores: NaN among the context tokens")
    mean = (scores * context_mask).sum(dim=1, keepdim=True) / count
    return context_mask & (scores <= mean)
