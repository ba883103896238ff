"""scikit-learn models on orientation features, and the paired statistics of the audit.

The test set holds every test molecule twice (as published, label 0; under a fresh
Haar rotation, label 1), so the statistics treat the two scores of one molecule as a pair:
the bootstrap resamples molecules, and the permutation test swaps labels within pairs,
which is exact under H0 "published poses are distributed like rotated ones".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shared_core.metrics import bootstrap_ci, roc_auc

__all__ = [
    "fit_feature_classifier",
    "fit_feature_regressor",
    "pair_auc",
    "pair_bootstrap_ci",
    "pair_permutation_pvalue",
]


def fit_feature_classifier(X: np.ndarray, y: np.ndarray, kind: str = "hgb", seed: int = 0) -> Any:
    """A fitted classifier: ``"logistic"`` (standardised logistic regression) or ``"hgb"``
    (histogram gradient boosting)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "logistic":
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    elif kind == "hgb":
        model = HistGradientBoostingClassifier(max_iter=300, learning_rate=0.1, random_state=seed)
    else:
        raise ValueError(f"kind: expected 'logistic' or 'hgb', got {kind!r}")
    X, y = _xy(X, y)
    if len(np.unique(y)) != 2:
        raise ValueError(f"y: expected two classes, got {np.unique(y).tolist()[:5]}")
    return model.fit(X, y)


def fit_feature_regressor(X: np.ndarray, y: np.ndarray, kind: str = "hgb", seed: int = 0) -> Any:
    """A fitted regressor: ``"hgb"``, ``"knn"`` (k = 10, standardised) or ``"ridge"``."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.linear_model import Ridge
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "hgb":
        model: Any = HistGradientBoostingRegressor(max_iter=300, random_state=seed)
    elif kind == "knn":
        model = make_pipeline(StandardScaler(), KNeighborsRegressor(n_neighbors=10))
    elif kind == "ridge":
        model = make_pipeline(StandardScaler(), Ridge())
    else:
        raise ValueError(f"kind: expected 'hgb', 'knn' or 'ridge', got {kind!r}")
    X, y = _xy(X, y)
    if not np.all(np.isfinite(y)):
        raise ValueError("y: contains NaN or infinite values")
    return model.fit(X, y)


def _pairs(s0: Any, s1: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(s0, dtype=np.float64), np.asarray(s1, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape or len(a) < 2:
        raise ValueError(
            f"s1: expected a 1-D array of scores paired with s0 (length >= 2), got {a.shape}, {b.shape}"
        )
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("s0, s1: scores contain NaN or infinite values")
    return a, b


def _xy(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    Xa, ya = np.asarray(X), np.asarray(y)
    if Xa.ndim != 2 or Xa.dtype.kind not in "iuf":
        raise ValueError(f"X: expected a real (n, d) feature matrix, got {Xa.dtype} {Xa.shape}")
    if ya.shape != (len(Xa),):
        raise ValueError(f"y: expected shape ({len(Xa)},) to match X, got {ya.shape}")
    if len(Xa) < 2:
        raise ValueError(f"X: expected at least 2 rows, got {len(Xa)}")
    if not np.all(np.isfinite(Xa)):
        raise ValueError("X: contains NaN or infinite values")
    return Xa, ya


def pair_auc(s0: Any, s1: Any) -> float:
    """ROC-AUC of rotated scores `s1` (positives) against published scores `s0` (negatives)."""
    a, b = _pairs(s0, s1)
    return roc_auc(np.r_[np.zeros(len(a)), np.ones(len(b))], np.r_[a, b])


def pair_bootstrap_ci(
    s0: Any, s1: Any, n_resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """``(auc, low, high)``: percentile bootstrap over molecules (both scores of a molecule move together)."""
    a, b = _pairs(s0, s1)
    return bootstrap_ci(pair_auc, a, b, n_resamples=n_resamples, level=level, seed=seed)


def pair_permutation_pvalue(
    s0: Any, s1: Any, n_permutations: int = 1000, seed: int = 0, chunk: int = 256
) -> float:
    """One-sided p-value of the AUC under within-pair label swaps: (1 + #{AUC* >= AUC}) / (1 + n).

    The ranks of all 2n scores are fixed under swaps, so each permuted AUC is a sum of
    chosen ranks, vectorised over permutations.
    """
    a, b = _pairs(s0, s1)
    if not isinstance(n_permutations, int) or n_permutations < 1:
        raise ValueError(f"n_permutations: expected a positive int, got {n_permutations!r}")
    n = len(a)
    from scipy.stats import rankdata

    ranks = rankdata(np.r_[a, b])
    r0, r1 = ranks[:n], ranks[n:]
    observed = (r1.sum() - n * (n + 1) / 2) / (n * n)
    rng = np.random.default_rng(seed)
    hits = 0
    for s in range(0, n_permutations, chunk):
        m = min(chunk, n_permutations - s)
        swap = rng.random((m, n)) < 0.5
        pos = np.where(swap, r0, r1).sum(1)
        auc = (pos - n * (n + 1) / 2) / (n * n)
        hits += int((auc >= observed - 1e-12).sum())
    return (1 + hits) / (1 + n_permutations)
