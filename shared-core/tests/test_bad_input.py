"""Bad input to shared-core's public entry points, in one table: each case raises a
ValueError/TypeError naming the argument (issue 46's probe categories: NaN/inf, empty,
shapes, dtypes, names, sizes, types)."""

from __future__ import annotations

import numpy as np
import pytest

from shared_core.chat import ChatClient
from shared_core.data import require_extra
from shared_core.metrics import (
    accuracy,
    bootstrap_ci,
    frechet_distance,
    mae,
    nll,
    r2_score,
    rmse,
    roc_auc,
    unigram_entropy,
)
from shared_core.report import markdown_table
from shared_core.testing import assert_bad_input
from shared_core.train import TrainConfig

CASES = {
    # metrics
    "accuracy of unequal lengths": (lambda: accuracy([0, 1], [0]), ValueError, "y_pred"),
    "accuracy of nothing": (lambda: accuracy([], []), ValueError, "y_true"),
    "mae of NaN": (lambda: mae([0.0, np.nan], [0.0, 1.0]), ValueError, "y_true"),
    "rmse of inf predictions": (lambda: rmse([0.0, 1.0], [0.0, np.inf]), ValueError, "y_pred"),
    "r2 of a constant target": (lambda: r2_score([1.0, 1.0], [0.0, 1.0]), ValueError, "y_true"),
    "roc_auc of one class": (lambda: roc_auc([1, 1], [0.1, 0.2]), ValueError, "y_true"),
    "roc_auc of labels 2": (lambda: roc_auc([0, 2], [0.1, 0.2]), ValueError, "y_true"),
    "nll of positive log-probabilities": (lambda: nll([0.5, -1.0]), ValueError, "log_probs"),
    "nll of nothing": (lambda: nll([]), ValueError, "log_probs"),
    "entropy of an id outside the vocabulary": (
        lambda: unigram_entropy([0, 5], 3),
        ValueError,
        "tokens",
    ),
    "bootstrap level 1": (
        lambda: bootstrap_ci(np.mean, np.arange(5.0), level=1.0),
        ValueError,
        "level",
    ),
    "bootstrap of unequal arrays": (
        lambda: bootstrap_ci(lambda a, b: 0.0, np.arange(5.0), np.arange(4.0)),
        ValueError,
        "arrays",
    ),
    "frechet of unequal widths": (
        lambda: frechet_distance(np.zeros((4, 2)), np.zeros((4, 3))),
        ValueError,
        "b",
    ),
    # training config
    "zero steps": (lambda: TrainConfig(steps=0), ValueError, "steps"),
    "NaN learning rate": (lambda: TrainConfig(lr=float("nan")), ValueError, "lr"),
    "unknown schedule": (lambda: TrainConfig(schedule="zzz"), ValueError, "schedule"),
    "beta of 1": (lambda: TrainConfig(betas=(0.9, 1.0)), ValueError, "betas"),
    "unknown amp dtype": (lambda: TrainConfig(amp_dtype="float8"), ValueError, "amp_dtype"),
    # chat client
    "a URL without a scheme": (lambda: ChatClient("127.0.0.1:8000", "m"), ValueError, "base_url"),
    "an empty model name": (lambda: ChatClient("http://x/v1", " "), ValueError, "model"),
    "a zero timeout": (lambda: ChatClient("http://x/v1", "m", timeout=0.0), ValueError, "timeout"),
    # report
    "a table of no rows": (lambda: markdown_table([]), ValueError, "rows"),
    "roc_auc of NaN scores": (
        lambda: roc_auc([0, 1], [0.1, np.nan]),
        ValueError,
        "score",
    ),
    "frechet of NaN features": (
        lambda: frechet_distance(np.full((4, 2), np.nan), np.zeros((4, 2))),
        ValueError,
        "a",
    ),
    "a table of lists": (lambda: markdown_table([[1, 2]]), TypeError, "rows"),
    # missing extras
    "require_extra of two extras, three modules": (
        lambda: require_extra("p", ("a", "b"), ("x", "y", "z"), "w"),
        ValueError,
        "module",
    ),
    "require_extra of no module": (lambda: require_extra("p", "a", (), "w"), ValueError, "module"),
    "require_extra raising a non-exception": (
        lambda: require_extra("p", "a", "json", "w", error=str),  # type: ignore[arg-type]
        TypeError,
        "error",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])
