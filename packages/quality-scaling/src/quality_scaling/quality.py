"""Estimators of the data-quality parameter Q in (0, 1] (1 = clean), for corpora and synthetic tasks.

The paper proposes (i) a corruption-rate proxy and (ii) a deficiency measure; their exact
formulas were not available to us (README, "Differences from the paper"). Implemented here:

(i) corruption-rate proxy, ``Q = 1 - p`` for a corruption rate p (the fraction of training
    tokens / examples that are corrupted). On a corpus p is *estimated*: substitution noise by
    maximum likelihood of the noisy bigram counts under ``K_p J K_p^T`` (`estimate_substitution_rate`),
    duplication by exact repeats of chunks (`estimate_duplication_rate`).
(ii) deficiency measure: how much of the clean-task information the best predictor learned from
    the corpus keeps, ``Q_def = (log V - CE_noisy) / (log V - CE_clean)``: CE is the clean held-out
    cross-entropy of a count model fitted on the noisy corpus, resp. on clean data of the same size
    (a plug-in, Le Cam-style comparison of the two experiments through one decision rule).
    `markov_deficiency` is its exact population value for a Markov source under substitution.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize_scalar

from quality_scaling.data import MarkovSource

__all__ = [
    "corruption_rate_proxy",
    "deficiency_q",
    "estimate_duplication_rate",
    "estimate_substitution_rate",
    "markov_deficiency",
    "ngram_pairs",
]


def _tokens(x: ArrayLike, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim not in (1, 2) or a.size == 0:
        raise ValueError(
            f"{name}: expected a non-empty 1-D stream or (rows, length) array, got {a.shape}"
        )
    if not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name}: expected integer token ids, got dtype {a.dtype}")
    if a.min() < 0:
        raise ValueError(f"{name}: expected token ids >= 0, got {a.min()}")
    return a if a.ndim == 2 else a[None]


def corruption_rate_proxy(rate: float | ArrayLike) -> np.ndarray | float:
    """``Q = 1 - p``: the fraction of clean data. Defined for ``0 <= p < 1``; Q in (0, 1]."""
    raw = np.asarray(rate)
    if raw.dtype.kind not in "iuf":
        raise TypeError(f"rate: expected a number or array of numbers, got {rate!r:.60}")
    p = raw.astype(float)
    if p.size == 0:
        raise ValueError("rate: expected at least one corruption rate, got an empty array")
    if np.any(~np.isfinite(p)) or np.any(p < 0) or np.any(p >= 1):
        raise ValueError(f"rate: expected 0 <= rate < 1, got {rate!r}")
    q = 1.0 - p
    return float(q) if q.ndim == 0 else q


def _bigram_joint(seqs: np.ndarray, vocab_size: int, smoothing: float = 0.0) -> np.ndarray:
    c = np.full((vocab_size, vocab_size), smoothing)
    np.add.at(c, (seqs[:, :-1].ravel(), seqs[:, 1:].ravel()), 1.0)
    return c


def estimate_substitution_rate(tokens: ArrayLike, reference: ArrayLike, vocab_size: int) -> float:
    """MLE of the uniform-substitution rate p of `tokens` given a clean `reference` sample.

    If each token is replaced with probability p by a uniform one, the bigram joint becomes
    ``K_p J K_p^T`` with ``K_p = (1 - p) I + p 11^T / V``; p maximises the likelihood of the
    observed bigram counts of `tokens` under it (J from `reference`, add-0.5 smoothed).
    """
    x, ref = _tokens(tokens, "tokens"), _tokens(reference, "reference")
    v = _check_vocab(vocab_size, x, ref)
    counts = _bigram_joint(x, v)
    joint = _bigram_joint(ref, v, smoothing=0.5)
    joint /= joint.sum()

    def nll(p: float) -> float:
        k = (1 - p) * np.eye(v) + p / v
        return -float((counts * np.log(k @ joint @ k.T)).sum())

    return float(minimize_scalar(nll, bounds=(0.0, 1.0 - 1e-9), method="bounded").x)


def estimate_duplication_rate(tokens: ArrayLike, chunk: int | None = None) -> float:
    """Fraction of chunks (rows of a 2-D array, or `chunk`-token pieces of a stream) that repeat an earlier one."""
    x = np.asarray(tokens)
    if x.ndim == 1:
        if not isinstance(chunk, (int, np.integer)) or isinstance(chunk, bool) or chunk < 1:
            raise ValueError(f"chunk: expected a positive int for a 1-D stream, got {chunk!r}")
        if len(x) < chunk:
            raise ValueError(f"tokens: expected at least one chunk of {chunk} tokens, got {len(x)}")
        x = x[: len(x) // chunk * chunk].reshape(-1, chunk)
    x = _tokens(x, "tokens")
    seen: set[bytes] = set()
    dup = 0
    for row in x:
        key = row.tobytes()
        dup += key in seen
        seen.add(key)
    return dup / len(x)


def _check_vocab(vocab_size: int, *arrays: np.ndarray) -> int:
    top = max(int(a.max()) for a in arrays)
    if (
        not isinstance(vocab_size, (int, np.integer))
        or isinstance(vocab_size, bool)
        or vocab_size <= top
    ):
        raise ValueError(
            f"vocab_size: expected an int > the largest token id {top}, got {vocab_size!r}"
        )
    return vocab_size


def ngram_pairs(
    seqs: ArrayLike, order: int = 1, vocab_size: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(context id, next token)`` pairs of order-`order` n-grams within each row."""
    x = _tokens(seqs, "seqs")
    v = int(x.max()) + 1 if vocab_size is None else _check_vocab(vocab_size, x)
    if not isinstance(order, (int, np.integer)) or isinstance(order, bool):
        raise TypeError(f"order: expected an int, got {order!r}")
    if order < 0 or order >= x.shape[1]:
        raise ValueError(f"order: expected 0 <= order < {x.shape[1]}, got {order}")
    ctx = np.zeros((x.shape[0], x.shape[1] - order), dtype=np.int64)
    for j in range(order):
        ctx = ctx * v + x[:, j : x.shape[1] - order + j]
    return ctx.ravel(), x[:, order:].ravel()


def _cross_entropy(
    train: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    v: int,
    smoothing: float,
) -> float:
    ctx_ids, inv = np.unique(np.concatenate([train[0], test[0]]), return_inverse=True)
    tr, te = inv[: len(train[0])], inv[len(train[0]) :]
    counts = np.full((len(ctx_ids), v), smoothing)
    np.add.at(counts, (tr, train[1]), 1.0)
    prob = counts / counts.sum(axis=1, keepdims=True)
    return float(-np.log(prob[te, test[1]]).mean())


def deficiency_q(
    noisy: tuple[np.ndarray, np.ndarray],
    clean: tuple[np.ndarray, np.ndarray],
    held_out: tuple[np.ndarray, np.ndarray],
    vocab_size: int,
    smoothing: float = 0.5,
) -> float:
    """``Q_def = (log V - CE(noisy -> held_out)) / (log V - CE(clean -> held_out))``, clipped to [0, 1].

    Each argument is ``(context ids, targets)`` (`ngram_pairs`, or source/target alignments for
    a seq2seq task). A count model (add-`smoothing`) is fitted on `noisy` and on `clean` (the
    first ``len(noisy)`` pairs, so both see the same D) and scored on clean `held_out` pairs.
    Q_def = 1 when the corpus is the clean sample; 0 when it teaches nothing beyond uniform.
    """
    for name, arg in (("noisy", noisy), ("clean", clean), ("held_out", held_out)):
        if not isinstance(arg, tuple) or len(arg) != 2:
            raise TypeError(
                f"{name}: expected a (contexts, targets) pair from ngram_pairs, got {arg!r:.60}"
            )
        for part in arg:
            a = np.asarray(part)
            if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
                raise TypeError(
                    f"{name}: expected 1-D integer arrays (contexts, targets), got dtype {a.dtype} "
                    f"shape {a.shape}"
                )
    if (
        not isinstance(vocab_size, (int, np.integer))
        or isinstance(vocab_size, bool)
        or vocab_size < 2
    ):
        raise ValueError(f"vocab_size: expected an int >= 2, got {vocab_size!r}")
    if not (isinstance(smoothing, (int, float)) and math.isfinite(smoothing) and smoothing > 0):
        raise ValueError(f"smoothing: expected a finite number > 0, got {smoothing!r}")
    n = len(noisy[0])
    if len(clean[0]) < n:
        raise ValueError(
            f"clean: expected at least {n} pairs (as many as noisy), got {len(clean[0])}"
        )
    for name, (c, t) in (("noisy", noisy), ("clean", clean), ("held_out", held_out)):
        if len(c) != len(t) or len(c) == 0:
            raise ValueError(f"{name}: expected equal, non-zero numbers of contexts and targets")
        if t.max() >= vocab_size or t.min() < 0:
            raise ValueError(f"{name}: targets must lie in [0, vocab_size={vocab_size})")
    clean = (clean[0][:n], clean[1][:n])
    h_max = math.log(vocab_size)
    info_clean = h_max - _cross_entropy(clean, held_out, vocab_size, smoothing)
    if info_clean <= 0:
        raise ValueError(
            "clean: a model fitted on the clean data is no better than uniform; Q is undefined"
        )
    info_noisy = h_max - _cross_entropy(noisy, held_out, vocab_size, smoothing)
    return float(np.clip(info_noisy / info_clean, 0.0, 1.0))


def markov_deficiency(source: MarkovSource, rate: float) -> float:
    """Exact population `deficiency_q` of an order-1 `source` under uniform substitution at `rate`.

    The Bayes predictor learned from infinite noisy data is ``P~(k | c~)`` from the noisy joint
    ``K J K^T``; scored on clean data it has cross-entropy ``-sum_ck J_ck log P~(k|c)``, and
    ``Q = (log V - CE) / (log V - H)``.
    """
    if not isinstance(source, MarkovSource):
        raise TypeError(f"source: expected a MarkovSource, got {type(source).__name__}")
    if source.order != 1:
        raise ValueError(f"source: expected an order-1 MarkovSource, got order {source.order}")
    corruption_rate_proxy(rate)
    v = source.vocab_size
    joint = source.pi[:, None] * source.P
    k = (1 - rate) * np.eye(v) + rate / v
    noisy = k @ joint @ k.T
    cond = noisy / noisy.sum(axis=1, keepdims=True)
    ce = -float((joint * np.log(cond)).sum())
    h_max = math.log(v)
    return float(np.clip((h_max - ce) / (h_max - source.entropy_rate), 0.0, 1.0))
