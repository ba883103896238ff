"""Metrics shared by several packages (numpy in, float out; torch CPU tensors are accepted)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

ArrayLike = Any


def _vec(x: ArrayLike, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    return a


def _pair(
    y_true: ArrayLike, y_pred: ArrayLike, pred_name: str = "y_pred"
) -> tuple[np.ndarray, np.ndarray]:
    t, p = _vec(y_true, "y_true"), _vec(y_pred, pred_name)
    if t.shape != p.shape:
        raise ValueError(f"{pred_name}: expected shape {t.shape} like y_true, got {p.shape}")
    return t, p


def accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Fraction of exact matches; `y_pred` may be labels ``(n,)`` or scores ``(n, classes)``."""
    p = np.asarray(y_pred)
    if p.ndim == 2:
        p = p.argmax(axis=1)
    t, p = _pair(y_true, p)
    return float(np.mean(t == p))


def roc_auc(y_true: ArrayLike, score: ArrayLike) -> float:
    """Area under the ROC curve for binary labels {0, 1}: the Mann-Whitney U statistic, ties averaged."""
    t, s = _pair(y_true, score, "score")
    if not np.all((t == 0) | (t == 1)):
        raise ValueError("y_true: expected binary labels 0/1")
    n_pos, n_neg = int(t.sum()), int((1 - t).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("y_true: ROC-AUC needs both classes present")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    # average ranks over ties (1-based)
    _, first, counts = np.unique(sorted_s, return_index=True, return_counts=True)
    avg = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(avg, counts)
    return float((ranks[t == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def mae(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    t, p = _pair(y_true, y_pred)
    return float(np.mean(np.abs(t - p)))


def rmse(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    t, p = _pair(y_true, y_pred)
    return float(np.sqrt(np.mean((t - p) ** 2)))


def r2_score(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Coefficient of determination 1 - SS_res / SS_tot (0 for the mean predictor)."""
    t, p = _pair(y_true, y_pred)
    ss_tot = float(np.sum((t - t.mean()) ** 2))
    if ss_tot == 0.0:
        raise ValueError("y_true: R^2 is undefined for a constant target")
    return 1.0 - float(np.sum((t - p) ** 2)) / ss_tot


def nll(log_probs: ArrayLike, base: float = math.e) -> float:
    """Mean negative log-likelihood of per-item log-probabilities (natural log), in units of `base`.

    ``base=math.e`` gives nats, ``base=2`` bits.
    """
    lp = _vec(log_probs, "log_probs")
    if np.any(lp > 1e-9):
        raise ValueError("log_probs: log-probabilities must be <= 0")
    return float(-lp.mean() / math.log(base))


def bits_per_dim(nll_nats: float) -> float:
    """Convert a per-dimension NLL in nats to bits."""
    return float(nll_nats) / math.log(2.0)


def perplexity(nll_nats: float) -> float:
    """exp of a mean per-token NLL in nats."""
    return float(math.exp(nll_nats))


def _token_counts(tokens: ArrayLike, vocab_size: int, name: str) -> np.ndarray:
    t = np.asarray(tokens).reshape(-1)
    if t.size == 0 or not np.issubdtype(t.dtype, np.integer):
        raise ValueError(
            f"{name}: expected a non-empty array of integer token ids, got dtype {t.dtype}"
        )
    if t.min() < 0 or t.max() >= vocab_size:
        raise ValueError(
            f"{name}: token ids must lie in [0, {vocab_size}), got [{t.min()}, {t.max()}]"
        )
    return np.bincount(t, minlength=vocab_size).astype(np.float64)


def unigram_entropy(tokens: ArrayLike, vocab_size: int, base: float = 2.0) -> float:
    """Entropy of the empirical unigram distribution of `tokens` (bits by default).

    Generated samples that collapse into repetition show a low value.
    """
    c = _token_counts(tokens, vocab_size, "tokens")
    p = c[c > 0] / c.sum()
    return float(-(p * np.log(p)).sum() / math.log(base))


def unigram_cross_entropy(
    train_tokens: ArrayLike,
    eval_tokens: ArrayLike,
    vocab_size: int,
    smoothing: float = 1.0,
    base: float = 2.0,
) -> float:
    """Per-token cross-entropy of `eval_tokens` under the add-`smoothing` unigram model of `train_tokens`."""
    if smoothing <= 0:
        raise ValueError(f"smoothing: expected a positive pseudo-count, got {smoothing}")
    c = _token_counts(train_tokens, vocab_size, "train_tokens") + smoothing
    logp = np.log(c / c.sum())
    _token_counts(eval_tokens, vocab_size, "eval_tokens")
    return float(-logp[np.asarray(eval_tokens).reshape(-1)].mean() / math.log(base))


def bootstrap_ci(
    metric: Callable[..., float],
    *arrays: ArrayLike,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    centre: str = "percentile",
) -> tuple[float, float, float]:
    """``(estimate, low, high)``: the metric and its bootstrap interval over rows.

    ``centre="percentile"`` gives the plain percentile interval. ``centre="median"`` shifts
    the resampled values by ``median - estimate`` first: for a statistic biased on a resample
    (the Frechet distance grows when repeated rows shrink the covariance's rank) the plain
    interval sits beside the estimate; the shifted one keeps it inside. Resamples that make
    the metric undefined (e.g. one class only) are skipped.
    """
    if not 0 < level < 1:
        raise ValueError(f"level: expected a value in (0, 1), got {level}")
    if centre not in ("percentile", "median"):
        raise ValueError(f"centre: expected 'percentile' or 'median', got {centre!r}")
    cols = [np.asarray(a) for a in arrays]
    n = len(cols[0])
    if any(len(c) != n for c in cols):
        raise ValueError("arrays: all arrays must have the same length")
    estimate = metric(*cols)
    rng = np.random.default_rng(seed)
    stats = []
    for _ in range(n_resamples):
        idx = rng.integers(0, n, n)
        try:
            stats.append(metric(*(c[idx] for c in cols)))
        except ValueError:
            continue
    if not stats:
        raise ValueError("metric: undefined on every bootstrap resample")
    shift = float(np.median(stats)) - estimate if centre == "median" else 0.0
    lo, hi = np.quantile(stats, [(1 - level) / 2, (1 + level) / 2]) - shift
    return float(estimate), float(lo), float(hi)


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Frechet distance between Gaussians fit to feature sets a (n, d) and b (m, d) (FID formula).

    ``|mu_a - mu_b|^2 + tr(S_a + S_b - 2 (S_a^1/2 S_b S_a^1/2)^1/2)``, with the matrix square
    roots taken by symmetric eigendecompositions (no scipy needed).
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or min(len(a), len(b)) < 2:
        raise ValueError(
            f"a, b: expected (n, d) and (m, d) feature arrays with n, m >= 2, "
            f"got shapes {a.shape} and {b.shape}"
        )
    for name, x in (("a", a), ("b", b)):
        if not np.isfinite(x).all():
            raise ValueError(
                f"{name}: expected finite features, got {int((~np.isfinite(x)).sum())} NaN/inf"
            )
    mu = a.mean(0) - b.mean(0)
    # atleast_2d: np.cov of one feature column is a 0-d array
    sa, sb = np.atleast_2d(np.cov(a, rowvar=False)), np.atleast_2d(np.cov(b, rowvar=False))
    w, q = np.linalg.eigh(sa)
    root_a = (q * np.sqrt(np.clip(w, 0, None))) @ q.T
    cross = np.linalg.eigvalsh(root_a @ sb @ root_a)
    return float(
        mu @ mu + np.trace(sa) + np.trace(sb) - 2.0 * np.sqrt(np.clip(cross, 0, None)).sum()
    )


def _image_pair(a: ArrayLike, b: ArrayLike, data_range: float) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim < 2:
        raise ValueError(
            f"a, b: expected two arrays of one shape (..., H, W), got {a.shape} and {b.shape}"
        )
    if isinstance(data_range, bool) or not isinstance(data_range, (int, float)):
        raise TypeError(f"data_range: expected a number, got {data_range!r}")
    if not 0 < data_range < math.inf:
        raise ValueError(f"data_range: expected a finite number > 0, got {data_range!r}")
    return a, b


def psnr(a: ArrayLike, b: ArrayLike, data_range: float = 1.0) -> np.ndarray:
    """Peak signal-to-noise ratio in dB of each image pair ``(..., H, W)`` -> ``(...)``:
    ``10 log10(L^2 / mean((a - b)^2))`` with ``L = data_range`` (inf for identical images)."""
    a, b = _image_pair(a, b, data_range)
    mse = ((a - b) ** 2).mean((-2, -1))
    with np.errstate(divide="ignore"):
        return np.asarray(10.0 * np.log10(data_range**2 / mse))


def ssim(
    a: ArrayLike,
    b: ArrayLike,
    *,
    window: int = 7,
    data_range: float = 1.0,
    sample_covariance: bool = False,
) -> np.ndarray:
    """Mean SSIM (Wang et al., 2004) of each image pair ``(..., H, W)`` -> ``(...)``.

    ``SSIM = (2 mu_a mu_b + C1)(2 s_ab + C2) / ((mu_a^2 + mu_b^2 + C1)(s_a^2 + s_b^2 + C2))``
    per uniform ``window x window`` window over the valid region (no padding), averaged;
    ``C1 = (0.01 L)^2``, ``C2 = (0.03 L)^2``, ``L = data_range``. The window's (co)variances
    divide by N (``sample_covariance=False``) or N - 1 (True: scikit-image's
    ``structural_similarity(a, b, data_range=L, win_size=window)`` default, equal to it for
    an odd window, tested).
    """
    from numpy.lib.stride_tricks import sliding_window_view

    a, b = _image_pair(a, b, data_range)
    if isinstance(window, bool) or not isinstance(window, int) or window < 2:
        raise ValueError(f"window: expected an int >= 2, got {window!r}")
    if window > min(a.shape[-2:]):
        raise ValueError(
            f"window: expected at most the image side {min(a.shape[-2:])}, got {window}"
        )
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    norm = window * window / (window * window - 1) if sample_covariance else 1.0

    def mean(x: np.ndarray) -> np.ndarray:
        return np.asarray(sliding_window_view(x, (window, window), axis=(-2, -1)).mean((-2, -1)))

    mu_a, mu_b = mean(a), mean(b)
    var_a = norm * (mean(a * a) - mu_a**2)
    var_b = norm * (mean(b * b) - mu_b**2)
    cov = norm * (mean(a * b) - mu_a * mu_b)
    s = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / (
        (mu_a**2 + mu_b**2 + c1) * (var_a + var_b + c2)
    )
    return np.asarray(s.mean((-2, -1)))
