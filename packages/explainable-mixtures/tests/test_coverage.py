"""No printed rule covers (near) zero rows: the last training stage can starve a rule (issue 66:
``ExplainableMixture(8, steps=400, seed=0)`` on ``planted(1500, seed=0)`` printed a fifth rule
``x0 <= -0.0866 ... (0.0 % of rows)``), and `drop_dead` removes it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from explainable_mixtures import ExplainableMixture
from explainable_mixtures.data import planted, split
from explainable_mixtures.parameterisation import subset
from explainable_mixtures.selection import alive_rules, drop_dead


def _rows_in_printed_boxes(est: ExplainableMixture, X: np.ndarray) -> np.ndarray:
    """``(n, k)`` bool: row inside rule i's printed box (open sides closed at the data range)."""
    bounds = np.stack([X.min(0), X.max(0)], 1)
    boxes = np.stack([r.box(est.feature_names_, bounds) for r in est.rules_])
    return np.all((X[:, None] >= boxes[None, :, :, 0]) & (X[:, None] <= boxes[None, :, :, 1]), -1)


@pytest.mark.parametrize(
    "n, steps, seed",
    [
        (1500, 400, 0),  # the case: a fifth rule with 0.0 % of the rows before 0.2.2
        (1000, 300, 5),
        pytest.param(800, 300, 4, marks=pytest.mark.slow),
        pytest.param(2000, 600, 0, marks=pytest.mark.slow),
    ],
)
def test_no_printed_rule_has_near_zero_coverage(n: int, steps: int, seed: int) -> None:
    train, _ = split(planted(n, seed=seed), 0.3, seed)
    est = ExplainableMixture(8, steps=steps, seed=seed).fit(train.X, train.y)
    shares = np.array([r.share for r in est.rules_])
    assert shares.min() >= est.min_share, est.describe()
    inside = _rows_in_printed_boxes(est, train.X).sum(0)
    assert inside.min() >= est.min_share * len(train.X), (inside, est.describe())


def test_drop_dead_removes_a_rule_whose_box_left_the_data() -> None:
    train, _ = split(planted(300, seed=1), 0.3, 1)
    est = ExplainableMixture(3, steps=20, bic_select=False, prune_rounds=0).fit(train.X, train.y)
    x = torch.as_tensor(train.X, dtype=torch.float32)
    y = torch.as_tensor(train.y, dtype=torch.float32)
    model = subset(est.model_, list(range(est.model_.k)))
    with torch.no_grad():  # rule 0's box on feature 0 slides below the data, as in the issue
        model.alpha[0, 0], model.beta[0, 0] = -30.0, -20.0
        model.a_raw[0, 0] = 5.0
    assert 0 not in alive_rules(model, x, 0.02, 0.02)
    kept = drop_dead(model, x, y, 0.02, 0.02)
    assert kept.k == model.k - 1
    assert drop_dead(kept, x, y, 0.02, 0.02) is kept  # nothing left to drop
