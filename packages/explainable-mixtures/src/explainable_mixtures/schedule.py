"""The training schedule of an explainable mixture (Sec. 4 of the paper, steps 1 to 4, in order).

1. `initial_model`: ``n_rules`` rules anchored at k-means++ centres of the standardised
   ``(x, y)``.
2. ``prune_rounds + 1`` equal stages of gradient descent on ``mean NLL + lam R + gamma C``
   through `shared_core.train.fit`, the temperature annealed geometrically from ``tau_start``
   to ``tau_end`` over all steps (`tau_at`).
3. Between stages, `prune_and_merge`.
4. With ``bic_select``: `select_by_bic`, `simplify_by_bic`, then one more stage at ``tau_end``.
5. `drop_dead` once more: a rule the last stage starved (share below ``min_share``, or an
   empty box) is not printed.

`learn` runs it all; the components are induced on all rows at ``tau_end`` at the end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch

from explainable_mixtures.parameterisation import initial_model, subset
from explainable_mixtures.selection import (
    coverage,
    drop_dead,
    prune_and_merge,
    select_by_bic,
    simplify_by_bic,
)


@dataclass(frozen=True)
class Schedule:
    """The hyper-parameters `learn` reads (`ExplainableMixture`'s, documented there)."""

    n_rules: int
    n_sub: int
    components: str
    lam: float
    gamma: float
    tau_start: float
    tau_end: float
    steps: int
    lr: float
    prune_rounds: int
    min_share: float
    merge_jaccard: float
    merge_hellinger: float
    bic_select: bool
    bic_count: str
    batch_size: int
    seed: int
    device: str
    show_progress: bool

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Schedule:
        """The schedule of an estimator's ``get_params()`` (other keys, e.g. dtype, ignored)."""
        return cls(**{f.name: params[f.name] for f in fields(cls)})

    def tau_at(self, step: int, total: int) -> float:
        """Geometric annealing ``tau_start -> tau_end`` over `total` steps (then ``tau_end``)."""
        frac = min(1.0, step / max(1, total - 1))
        return self.tau_start * (self.tau_end / self.tau_start) ** frac


def train_stage(
    model: Any,
    x: torch.Tensor,
    y: torch.Tensor,
    schedule: Schedule,
    steps: int,
    offset: int,
    total: int,
) -> list[dict[str, float]]:
    """`steps` AdamW steps on ``x (n, d)``, ``y (n, d_y)`` (minibatches of ``batch_size`` rows
    when there are more), steps ``offset ... offset + steps - 1`` of a `total`-step annealing;
    returns `shared_core.train.fit`'s history. The model ends on the CPU."""
    from shared_core.train import TrainConfig, fit, step_generator

    n = len(x)
    lam, gamma = schedule.lam, schedule.gamma

    def batch_fn(step: int) -> dict[str, Any]:
        tau = schedule.tau_at(offset + step, total)
        if n <= schedule.batch_size:
            return {"x": x, "y": y, "tau": tau}
        g = step_generator(schedule.seed, offset + step)
        idx = torch.randint(n, (schedule.batch_size,), generator=g)
        return {"x": x[idx], "y": y[idx], "tau": tau}

    def loss_fn(m: Any, batch: dict[str, Any]) -> tuple[Any, dict[str, float]]:
        return getattr(m, "module", m).objective(  # type: ignore[no-any-return]
            batch["x"], batch["y"], batch["tau"], lam, gamma
        )

    config = TrainConfig(
        steps=steps, lr=schedule.lr, schedule="constant", weight_decay=0.0, grad_clip=0.0
    )
    result = fit(
        model,
        loss_fn,
        batch_fn,
        config,
        desc=f"emm train k={model.k}",
        show_progress=schedule.show_progress,
        device=schedule.device,
    )
    model.to("cpu")
    return list(result.history)


def learn(
    x: np.ndarray, t: np.ndarray, schedule: Schedule, dt: torch.dtype
) -> tuple[Any, list[dict[str, float]]]:
    """The fitted `RuleMixture` (rules ordered by their share of the rows, components induced
    at ``tau_end``) and the training history, from ``x (n, d)`` and ``t (n, d_y)``."""
    xt = torch.as_tensor(x, dtype=dt)
    yt = torch.as_tensor(t, dtype=dt)
    s = schedule
    model = initial_model(x, t, s.n_rules, s.n_sub, int(s.seed), dt, s.components == "induced")
    stages = int(s.prune_rounds) + 1
    per_stage = max(1, s.steps // stages)
    total = per_stage * stages
    history: list[dict[str, float]] = []
    for stage in range(stages):
        history += train_stage(model, xt, yt, s, per_stage, stage * per_stage, total)
        if stage < stages - 1:
            tau = s.tau_at((stage + 1) * per_stage - 1, total)  # the stage's last temperature
            model.induce(xt, yt, tau)
            model = prune_and_merge(
                model,
                xt,
                yt,
                tau,
                min_share=s.min_share,
                merge_jaccard=s.merge_jaccard,
                merge_hellinger=s.merge_hellinger,
            )
    model.induce(xt, yt, s.tau_end)
    if s.bic_select:
        model = select_by_bic(model, xt, yt, s.tau_end, s.merge_jaccard, s.bic_count)
        model = simplify_by_bic(model, xt, yt, s.tau_end, s.bic_count)
        history += train_stage(model, xt, yt, s, per_stage, total, total)
    # the last stage can starve a rule (its box slides off the data, share 0): drop such rules,
    # as between stages, so that none is printed
    model = drop_dead(model, xt, yt, s.tau_end, s.min_share)
    model.induce(xt, yt, s.tau_end)
    _, share = coverage(model, xt, s.tau_end)
    return subset(model, list(np.argsort(-share, kind="stable"))).eval(), history
