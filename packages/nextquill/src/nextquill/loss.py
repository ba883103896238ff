"""The NextQuill objective (Zhao, You et al., ICLR 2026, arXiv 2506.02368), batched.

For response token y_t of a user with history h and query x, a model f_theta gives logits
with the history, f(x, h, y_<t), and without it, f(x, 0, y_<t) (the same prompt with the
history block removed). The paper's two causal preference effects:

- model side: ``Delta_t = f(x, h, y_<t) - f(x, 0, y_<t)`` (a logit difference), aligned with the
  data by ``L_p = sum_t w_t CE(Delta_t, y_t)``;
- data side: ``DCE_t = p_D(y_t | x, h, y_<t) - p_D(y_t | x, 0, y_<t)`` from a reference model
  theta_D; tokens whose probability the history raises by more than delta are
  preference-bearing, ``w_t = lambda if DCE_t > delta else eps`` (delta = 0.05, lambda = 0.9,
  eps = 0.1), normalised to sum 1 over the batch's response tokens (padding and -100 get 0),
  and fitted by ``L_n = sum_t w_t CE(f(x, h, y_<t), y_t)``.

The objective is ``L_n + alpha L_p`` (alpha = 0.1). The public code (``train.py``,
``CustomTrainer3``) differs in two ways, both offered here: its L_p is the plain token mean
(``lp_reduction="mean"``), and its DCE comes from the model being trained (``reference_model=
None``), detached (the weights are built from a comparison, so no gradient flows through them).

Tokens are paired across the two passes by order within each row, not by position, so left and
right padding (and prompts of any length) give the same loss.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F

from nextquill._checks import check_aligned_targets, check_batch, check_number

LP_REDUCTIONS = ("weighted", "mean")


@dataclass(frozen=True)
class NextQuillConfig:
    """The loss's hyper-parameters; defaults are the paper's (and the code's) values."""

    alpha: float = 0.1  # weight of the model-side loss L_p
    delta: float = 0.05  # DCE threshold above which a token is preference-bearing
    lam: float = 0.9  # weight of a preference-bearing token (lambda)
    eps: float = 0.1  # weight of every other token (epsilon)
    lp_reduction: str = "weighted"  # "weighted": sum_t w_t CE(Delta_t) (paper); "mean": code

    def __post_init__(self) -> None:
        check_number("alpha", self.alpha, 0.0)
        check_number("delta", self.delta, -1.0, 1.0)
        check_number("lam", self.lam, 0.0)
        check_number("eps", self.eps, 0.0)
        if self.lam + self.eps <= 0:
            raise ValueError(
                f"lam, eps: expected at least one > 0 so the weights can be normalised, got "
                f"{self.lam!r}, {self.eps!r}"
            )
        if self.lp_reduction not in LP_REDUCTIONS:
            raise ValueError(
                f"lp_reduction: expected one of {LP_REDUCTIONS}, got {self.lp_reduction!r}"
            )


class NextQuillTerms(NamedTuple):
    """The parts of the objective over the N response tokens of a batch (row-major order)."""

    loss: torch.Tensor  # L_n + alpha L_p (scalar)
    l_n: torch.Tensor  # weighted CE of the full-prompt predictions (scalar)
    l_p: torch.Tensor  # CE of the logit difference Delta (scalar)
    weights: torch.Tensor  # (N,) normalised w_t, detached (sum 1 over the normalising batch)
    dce: torch.Tensor  # (N,) data-side effect p_D(y|h) - p_D(y|0), detached
    targets: torch.Tensor  # (N,) the response token ids y_t


def target_logits(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``(N, vocab)`` logits that predict the N labelled tokens, and those tokens ``(N,)``.

    `labels` are unshifted (Hugging Face): logits[:, t] predicts labels[:, t + 1].
    """
    mask = labels[:, 1:] != -100
    return logits[:, :-1][mask], labels[:, 1:][mask]


def data_side_effect(
    logits_with: torch.Tensor, logits_without: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """``DCE_t = p(y_t | x, h, y_<t) - p(y_t | x, 0, y_<t)`` for ``(N, V)`` logits, ``(N,)`` targets."""
    idx = targets.unsqueeze(-1)
    p_with = _upcast(logits_with).softmax(-1).gather(-1, idx).squeeze(-1)
    p_without = _upcast(logits_without).softmax(-1).gather(-1, idx).squeeze(-1)
    return p_with - p_without


def _upcast(t: torch.Tensor) -> torch.Tensor:
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def raw_weights(dce: torch.Tensor, delta: float, lam: float, eps: float) -> torch.Tensor:
    """``w_t = lam if DCE_t > delta else eps`` before normalisation, ``(N,)`` (detached)."""
    dce = dce.detach()
    return torch.full_like(dce, eps).masked_fill(dce > delta, lam)


class AllWeightsEpsWarning(RuntimeWarning):
    """No response token of a batch has ``DCE > delta``: every weight is eps, L_n is ContextSFT."""


class PreferenceShare:
    """The share of response tokens with ``DCE_t > delta`` (weight lambda) over a training run.

    ``update(dce)`` adds a batch's ``(N,)`` DCE and returns that batch's share; the first
    batch in which no token is over delta (a fresh or weak theta_D, or self weights early on:
    every weight eps, so the normalised weights are uniform and L_n is ContextSFT's token
    mean) raises ONE `AllWeightsEpsWarning` per tracker (one tracker per run) naming the share
    of the run so far. `share` is the run's share (the public code prints the same ratio
    every step, ``print("Ratio:", ...)`` in ``train.py``).
    """

    def __init__(self, delta: float) -> None:
        check_number("delta", delta, -1.0, 1.0)
        self.delta = float(delta)
        self.over = 0
        self.tokens = 0
        self.warned = False

    def update(self, dce: torch.Tensor) -> float:
        over, n = int((dce.detach() > self.delta).sum()), int(dce.numel())
        self.over += over
        self.tokens += n
        if over == 0 and n > 0 and not self.warned:
            self.warned = True
            warnings.warn(
                f"nextquill: no response token of this batch has DCE > delta = {self.delta:g} "
                f"(share over delta in this run so far: {self.share:.1%} of {self.tokens} "
                "tokens): every weight is eps, so L_n is ContextSFT's token mean. theta_D (or "
                "the model itself, without one) does not yet tell the history's tokens apart; "
                "warned once per run",
                AllWeightsEpsWarning,
                stacklevel=2,
            )
        return over / n if n else 0.0

    @property
    def share(self) -> float:
        """Tokens over delta / tokens, over every batch seen (0.0 before the first)."""
        return self.over / self.tokens if self.tokens else 0.0


def preference_weights(
    dce: torch.Tensor,
    delta: float,
    lam: float,
    eps: float,
    total: torch.Tensor | float | None = None,
) -> torch.Tensor:
    """``w_t = lam if DCE_t > delta else eps`` divided by `total` (detached).

    `total` is the sum of the unnormalised weights over the whole batch the loss averages over;
    None takes these N tokens' own sum (the weights then sum to 1). A gradient-accumulated or
    data-parallel batch passes its global sum, so its micro-batches' weights sum to 1 together.
    """
    w = raw_weights(dce, delta, lam, eps)
    if total is not None and not float(total) > 0:
        raise ValueError(f"total: expected a positive sum of weights, got {float(total)}")
    return w / (w.sum() if total is None else total)


def nextquill_from_logits(
    logits_with: torch.Tensor,
    logits_without: torch.Tensor,
    targets: torch.Tensor,
    config: NextQuillConfig | None = None,
    dce: torch.Tensor | None = None,
    weight_total: torch.Tensor | float | None = None,
    token_total: torch.Tensor | float | None = None,
) -> NextQuillTerms:
    """The objective from the ``(N, V)`` logits of both passes at the N response tokens.

    `dce` is the data side's effect (from a reference model); None takes it from these
    logits, detached (the code's choice). `weight_total` and `token_total` are the sum of the
    unnormalised weights and the number of response tokens of the batch the loss is an
    average over (a gradient-accumulation window, all ranks); None: these N tokens. With
    them, the losses of the micro-batches of a window add up to the loss of the whole window.
    """
    cfg = config or NextQuillConfig()
    for name, t in (("logits_with", logits_with), ("logits_without", logits_without)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.ndim != 2:
            raise TypeError(f"{name}: expected a floating (N, vocab) tensor, got {_desc(t)}")
    if logits_without.shape != logits_with.shape:
        raise ValueError(
            f"logits_without: expected the shape of logits_with {tuple(logits_with.shape)}, "
            f"got {tuple(logits_without.shape)}"
        )
    if targets.shape != logits_with.shape[:1]:
        raise ValueError(
            f"targets: expected shape ({logits_with.shape[0]},), got {tuple(targets.shape)}"
        )
    if logits_with.shape[0] == 0:
        raise ValueError("targets: expected at least one response token, got none")
    for name, t in (("logits_with", logits_with), ("logits_without", logits_without)):
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name}: contains NaN or infinite values")
    vocab = logits_with.shape[1]
    if bool(((targets < 0) | (targets >= vocab)).any()):
        raise ValueError(
            f"targets: expected token ids in 0..{vocab - 1}, got "
            f"{int(targets.min())}..{int(targets.max())}"
        )
    if dce is None:
        dce = data_side_effect(logits_with.detach(), logits_without.detach(), targets)
    elif dce.shape != targets.shape:
        raise ValueError(f"dce: expected shape {tuple(targets.shape)}, got {tuple(dce.shape)}")
    elif not bool(torch.isfinite(dce).all()):
        raise ValueError("dce: contains NaN or infinite values")
    dce = dce.detach()
    w = preference_weights(dce, cfg.delta, cfg.lam, cfg.eps, weight_total)
    ce = F.cross_entropy(logits_with, targets, reduction="none")
    l_n = (w.to(ce.dtype) * ce).sum()
    # CE is shift-invariant per row, so any per-position constant in either pass cancels.
    ce_delta = F.cross_entropy(logits_with - logits_without, targets, reduction="none")
    if cfg.lp_reduction == "weighted":
        l_p = (w.to(ce.dtype) * ce_delta).sum()
    else:
        l_p = ce_delta.sum() / (targets.numel() if token_total is None else token_total)
    return NextQuillTerms(l_n + cfg.alpha * l_p, l_n, l_p, w, dce, targets)


def _desc(t: Any) -> str:
    if isinstance(t, torch.Tensor):
        return f"{t.dtype} of shape {tuple(t.shape)}"
    return type(t).__name__


def _accepts_position_ids(model: Any) -> bool:
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
    return "position_ids" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )


def forward_logits(
    model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor
) -> torch.Tensor:
    """``model(input_ids, attention_mask, position_ids).logits`` with positions counted from
    the first real token, so a left-padded row sees the positions of its unpadded self."""
    kwargs: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask}
    if _accepts_position_ids(model):
        kwargs["position_ids"] = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
    out = model(**kwargs)
    return out.logits if hasattr(out, "logits") else out[0]


def both_passes(
    model: Any, batch: Mapping[str, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The ``(N, V)`` logits of `model` at the response tokens with and without history, and the
    ``(N,)`` targets, after checking that both passes score the same tokens."""
    m_with, m_without = check_aligned_targets(batch["labels"], batch["labels_without_history"])
    lw = forward_logits(model, batch["input_ids"], batch["attention_mask"])
    l0 = forward_logits(
        model, batch["input_ids_without_history"], batch["attention_mask_without_history"]
    )
    targets = batch["labels"][:, 1:][m_with]
    return lw[:, :-1][m_with], l0[:, :-1][m_without], targets


def batch_dce(model: Any, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """``(N,)`` data-side effect ``p(y|x,h) - p(y|x,0)`` of `model` on a batch, without gradient."""
    check_batch(batch)
    with torch.no_grad():
        lw, l0, targets = both_passes(model, batch)
        return data_side_effect(lw, l0, targets)


def nextquill_terms(
    model: Any,
    batch: Mapping[str, torch.Tensor],
    config: NextQuillConfig | None = None,
    reference_model: Any = None,
    *,
    dce: torch.Tensor | None = None,
    weight_total: torch.Tensor | float | None = None,
    token_total: torch.Tensor | float | None = None,
) -> NextQuillTerms:
    """All parts of the NextQuill objective of `model` on a batch of `nextquill.data.encode`.

    Args:
        model: a Hugging Face causal LM (or any module returning ``.logits``), peft or not.
        batch: the six ``(batch, length)`` tensors (with and without the history block).
        config: `NextQuillConfig` (paper defaults).
        reference_model: theta_D of the data-side effect (the paper; run without gradient);
            None uses `model`'s own two passes, detached (the public code).
        dce: the ``(N,)`` data-side effect already computed (`batch_dce`); overrides
            `reference_model`.
        weight_total, token_total: the normalisers of a larger batch this one is part of
            (see `nextquill_from_logits`); None: this batch.
    """
    check_batch(batch)
    lw, l0, targets = both_passes(model, batch)
    if dce is None and reference_model is not None:
        dce = batch_dce(reference_model, batch)
    return nextquill_from_logits(lw, l0, targets, config, dce, weight_total, token_total)


def nextquill_loss(
    model: Any,
    batch: Mapping[str, torch.Tensor],
    config: NextQuillConfig | None = None,
    reference_model: Any = None,
) -> torch.Tensor:
    """``L_n + alpha L_p`` (a scalar to backpropagate); see `nextquill_terms` for the arguments."""
    return nextquill_terms(model, batch, config, reference_model).loss
