"""Bad input to the public API, in one table: each case raises a ValueError/TypeError naming
the argument (issue 46's probe categories: NaN/inf, empty, shapes, dtypes, ids, types)."""

from __future__ import annotations

import pytest
import torch
from dist2loss import dist2_loss, dist2_targets, entropy_matched_tau, number_table, place_values

from shared_core.testing import assert_bad_input

_T = number_table({3: 0.0, 4: 1.0, 5: 2.0}, vocab_size=8)
_LOGITS = torch.randn(2, 4, 8)
_LABELS = torch.tensor([[3, 4, 1, -100], [5, 5, 2, 0]])

CASES = {
    "NaN logits": (lambda: dist2_loss(_LOGITS * float("nan"), _LABELS, _T), ValueError, "logits"),
    "integer logits": (lambda: dist2_loss(_LOGITS.long(), _LABELS, _T), TypeError, "logits"),
    "logits of the wrong vocabulary": (
        lambda: dist2_loss(_LOGITS[..., :6], _LABELS, _T),
        ValueError,
        "logits",
    ),
    "labels of another shape": (
        lambda: dist2_loss(_LOGITS, _LABELS[:, :3], _T),
        ValueError,
        "labels",
    ),
    "float labels": (lambda: dist2_loss(_LOGITS, _LABELS.float(), _T), TypeError, "labels"),
    "label outside the vocabulary": (
        lambda: dist2_loss(_LOGITS, torch.tensor([[3, 9, 1, 0], [5, 5, 2, 0]]), _T),
        ValueError,
        "labels",
    ),
    "zero tau": (lambda: dist2_loss(_LOGITS, _LABELS, _T, tau=0.0), ValueError, "tau"),
    "NaN alpha": (
        lambda: dist2_loss(_LOGITS, _LABELS, _T, alpha=float("nan")),
        ValueError,
        "alpha",
    ),
    "unknown target": (
        lambda: dist2_loss(_LOGITS, _LABELS, _T, target="zzz"),
        ValueError,
        "target",
    ),
    "unknown normalise": (
        lambda: dist2_loss(_LOGITS, _LABELS, _T, normalise="zzz"),
        ValueError,
        "normalise",
    ),
    "a dict as the metric": (lambda: dist2_loss(_LOGITS, _LABELS, {3: 0.0}), TypeError, "metric"),
    "targets with zero tau": (lambda: dist2_targets(_LABELS, _T, tau=0.0), ValueError, "tau"),
    "table of NaN values": (lambda: number_table({3: float("nan")}, 8), ValueError, "values"),
    "table of no values": (lambda: number_table({}, 8), ValueError, "values"),
    "table id outside the vocabulary": (
        lambda: number_table({3: 0.0, 9: 1.0}, 8),
        ValueError,
        "token_ids",
    ),
    "unknown distance": (
        lambda: number_table({3: 0.0, 4: 1.0}, 8, distance="zzz"),
        ValueError,
        "distance",
    ),
    "negative entropy": (lambda: entropy_matched_tau(_T, -1.0), ValueError, "entropy"),
    "place values of float labels": (
        lambda: place_values(_LABELS.float(), _T),
        TypeError,
        "labels",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])
