"""The arms every experiment trains, as ``loss_fn(model, batch)`` for `shared_core.train.fit`.

Shared by `nextquill.experiments.planted` and `nextquill.experiments.smollm2` (neither imports
the other's module for it). Two forms of NextQuill's ablation (paper, Sec. 5 "ablation"):

- the paper's form: token weights from a frozen reference model theta_D trained on D, L_p
  weighted by them (``ln``, ``lp``, ``nextquill``);
- the public code's form (``train.py``, ``CustomTrainer3``): weights from the model being
  trained (detached), L_p the plain token mean (``ln_code``, ``lp_code``, ``nextquill_code``).

``sft`` (ContextSFT, the token-mean CE of the response given x and the history) is the same
in both forms.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nextquill.loss import NextQuillConfig

if TYPE_CHECKING:
    import torch

ARMS = ("sft", "ln", "lp", "nextquill", "ln_code", "lp_code", "nextquill_code")
LABELS = {
    "sft": "ContextSFT (history in prompt)",
    "ln": "L_n only (paper: θ_D weights)",
    "lp": "L_p only (paper: θ_D-weighted)",
    "nextquill": "NextQuill (paper: weighted L_p, θ_D)",
    "ln_code": "L_n only (code: self weights)",
    "lp_code": "L_p only (code: token mean)",
    "nextquill_code": "NextQuill (code: mean L_p, self weights)",
}
USES_REFERENCE = ("ln", "lp", "nextquill")


def make_loss(arm: str, config: NextQuillConfig, reference: Any) -> Any:
    """``loss_fn(model, batch) -> (loss, parts)`` of one arm; `reference` is theta_D (paper
    form) and is ignored by the code-form arms and ``sft``. The weighted arms log
    ``over_delta``, the batch's share of tokens with ``DCE > delta``, and warn once per
    `make_loss` (one run) when a batch has none (`nextquill.loss.PreferenceShare`)."""
    from nextquill.loss import PreferenceShare, forward_logits, nextquill_terms, target_logits

    if arm not in LABELS:
        raise ValueError(f"arm: expected one of {list(LABELS)}, got {arm!r}")
    code = arm.endswith("_code")
    cfg = replace(config, lp_reduction="mean") if code else config
    if arm.startswith("ln"):
        cfg = replace(cfg, alpha=0.0)
    ref = None if code else reference

    share = PreferenceShare(cfg.delta)  # make_loss is called once per run: one warning

    def loss_fn(model: Any, batch: dict[str, torch.Tensor]) -> Any:
        import torch.nn.functional as F

        if arm == "sft":
            logits = forward_logits(model, batch["input_ids"], batch["attention_mask"])
            flat, y = target_logits(logits, batch["labels"])
            return F.cross_entropy(flat, y)
        t = nextquill_terms(model, batch, cfg, ref)
        parts = {
            "L_n": float(t.l_n.detach()),
            "L_p": float(t.l_p.detach()),
            "over_delta": share.update(t.dce),  # the batch's share of tokens with DCE > delta
        }
        return (t.l_p if arm.startswith("lp") else t.loss), parts

    return loss_fn
