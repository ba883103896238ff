"""How well learned rules recover planted ones: box Jaccard (volume IoU) with a one-to-one
matching, NMI of the row assignments, and rule fidelity (rows inside their rule's box)."""

from __future__ import annotations

import numpy as np


def box_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Volume intersection over union of two ``(d, 2)`` axis-aligned boxes (0 for empty ones)."""
    side_a = np.clip(a[:, 1] - a[:, 0], 0.0, None)
    side_b = np.clip(b[:, 1] - b[:, 0], 0.0, None)
    inter = np.clip(np.minimum(a[:, 1], b[:, 1]) - np.maximum(a[:, 0], b[:, 0]), 0.0, None)
    vol_i = float(np.prod(inter))
    union = float(np.prod(side_a)) + float(np.prod(side_b)) - vol_i
    return vol_i / union if union > 0 else 0.0


def matched_jaccard(learned: list[np.ndarray], planted: np.ndarray) -> np.ndarray:
    """Jaccard of each planted box with its learned match (Hungarian, maximising the total).

    Returns ``(k_planted,)``; a planted box left without a learned one scores 0.
    """
    from scipy.optimize import linear_sum_assignment

    scores = np.array([[box_jaccard(lb, pb) for pb in planted] for lb in learned]).reshape(
        len(learned), len(planted)
    )
    out = np.zeros(len(planted))
    rows, cols = linear_sum_assignment(-scores)
    out[cols] = scores[rows, cols]
    return out


def fidelity(X: np.ndarray, assignment: np.ndarray, boxes: list[np.ndarray]) -> float:
    """Share of rows that lie inside the box of the rule they are assigned to."""
    inside = [
        bool(np.all((x >= boxes[i][:, 0]) & (x <= boxes[i][:, 1])))
        for x, i in zip(X, assignment, strict=True)
    ]
    return float(np.mean(inside))
