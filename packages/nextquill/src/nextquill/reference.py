"""The NextQuill objective written out token by token: the slow, exact oracle of the tests.

One example at a time, unpadded, in float64, with each quantity as in the paper (Sec. 3,
eqs. for the model-side effect, the data-side effect and the two losses):

    Delta_t = f(x, h, y_<t) - f(x, 0, y_<t)                     model-side effect (logits)
    DCE_t   = p_D(y_t | x, h, y_<t) - p_D(y_t | x, 0, y_<t)     data-side effect
    w_t     = lambda if DCE_t > delta else eps,  then w / sum(w) over the batch's tokens
    L_n     = sum_t w_t [logsumexp f(x, h, y_<t) - f(x, h, y_<t)[y_t]]
    L_p     = sum_t w_t [logsumexp Delta_t - Delta_t[y_t]]   (or the plain mean: the code)
    loss    = L_n + alpha L_p

`nextquill.loss` computes the same on padded batches in one pass per prompt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from nextquill.data import Encoded
from nextquill.loss import NextQuillConfig


def _row_logits(model: Any, ids: list[int]) -> list[list[float]]:
    device = next(model.parameters()).device
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids], device=device))
    logits = out.logits if hasattr(out, "logits") else out[0]
    return logits[0].double().tolist()


def _logsumexp(row: Sequence[float]) -> float:
    m = max(row)
    return m + math.log(sum(math.exp(v - m) for v in row))


def reference_terms(
    model: Any,
    encoded: Sequence[Encoded],
    config: NextQuillConfig | None = None,
    reference_model: Any = None,
) -> dict[str, Any]:
    """``{"loss", "l_n", "l_p"}`` floats and ``{"weights", "dce", "targets"}`` lists.

    `encoded` are unpadded examples (`nextquill.data.encode_one`); `reference_model` is
    theta_D (None: `model` itself).
    """
    cfg = config or NextQuillConfig()
    ref = model if reference_model is None else reference_model
    ce: list[float] = []
    ce_delta: list[float] = []
    dce: list[float] = []
    targets: list[int] = []
    for e in encoded:
        fw, f0 = _row_logits(model, e.with_history), _row_logits(model, e.without_history)
        dw, d0 = _row_logits(ref, e.with_history), _row_logits(ref, e.without_history)
        n_w, n_0 = len(e.with_history), len(e.without_history)
        for k in range(e.n_target):
            y = e.with_history[n_w - e.n_target + k]
            tw, t0 = n_w - e.n_target + k - 1, n_0 - e.n_target + k - 1  # predicting positions
            if tw < 0:
                continue  # a response that starts the sequence has no prediction for y_0
            lw, l0 = fw[tw], f0[t0]
            ce.append(_logsumexp(lw) - lw[y])
            delta = [a - b for a, b in zip(lw, l0, strict=True)]
            ce_delta.append(_logsumexp(delta) - delta[y])
            pw = math.exp(dw[tw][y] - _logsumexp(dw[tw]))
            p0 = math.exp(d0[t0][y] - _logsumexp(d0[t0]))
            dce.append(pw - p0)
            targets.append(y)
    raw = [cfg.lam if d > cfg.delta else cfg.eps for d in dce]
    total = sum(raw)
    w = [r / total for r in raw]
    l_n = sum(wi * c for wi, c in zip(w, ce, strict=True))
    if cfg.lp_reduction == "weighted":
        l_p = sum(wi * c for wi, c in zip(w, ce_delta, strict=True))
    else:
        l_p = sum(ce_delta) / len(ce_delta)
    return {
        "loss": l_n + cfg.alpha * l_p,
        "l_n": l_n,
        "l_p": l_p,
        "weights": w,
        "dce": dce,
        "targets": targets,
    }
