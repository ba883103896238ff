"""Estimators of the data-quality parameter Q in (0, 1] (1 = clean), for corpora and synthetic tasks.

The paper (note, "Key Designs" 1) proposes two estimators:

(i) corruption rate, ``Q = 1 - CR`` for ``0 <= CR < 1`` (`corruption_rate_proxy`): in the paper's
    protocol CR = eta, the fraction of corrupted samples. On a corpus p is *estimated*:
    substitution noise by maximum likelihood of the noisy bigram counts under ``K_p J K_p^T``
    (`estimate_substitution_rate`), duplication by exact repeats (`estimate_duplication_rate`).
(ii) deficiency, ``Q = exp(-Delta)`` with Delta >= 0 a positive, continuous, additive deficiency
    (the paper's definition; its noise component mu_1 E is not given a formula in the note). We
    measure Delta in nats per token: ``Delta = CE_noisy - CE_clean``, the excess clean held-out
    cross-entropy of a count model fitted on the corpus over one fitted on clean data of the
    same size (a plug-in, Le Cam-style comparison of the two experiments through one decision
    rule), so Q = exp(-Delta) is a per-token likelihood ratio (``definition="paper"``, the default).
    Ours, kept as an option (``definition="ratio"``): the fraction of the clean information kept,
    ``Q = (log V - CE_noisy) / (log V - CE_clean)``.
    `markov_deficiency` is the exact population value of either for a Markov source under
    i.i.d. substitution.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize_scalar

from quality_scaling.data import PAPER_TOKEN_FRACTION, MarkovSource, corrupted_tokens

__all__ = [
    "DEFICIENCY_DEFINITIONS",
    "corruption_rate_proxy",
    "deficiency_q",
    "estimate_duplication_rate",
    "estimate_substitution_rate",
    "markov_deficiency",
    "markov_noisy_floor",
    "ngram_pairs",
]


DEFICIENCY_DEFINITIONS = ("paper", "ratio")
"""``paper``: Q = exp(-(CE_noisy - CE_clean)); ``ratio`` (ours): Q = (log V - CE_noisy) /
(log V - CE_clean)."""


def _deficiency_to_q(ce_noisy: float, ce_clean: float, h_max: float, definition: str) -> float:
    """Q from the two clean-test cross-entropies under `definition` (`DEFICIENCY_DEFINITIONS`)."""
    if definition == "paper":
        return float(math.exp(-max(ce_noisy - ce_clean, 0.0)))
    return float(np.clip((h_max - ce_noisy) / (h_max - ce_clean), 0.0, 1.0))


def _check_definition(definition: object) -> str:
    if definition not in DEFICIENCY_DEFINITIONS:
        raise ValueError(
            f"definition: expected one of {DEFICIENCY_DEFINITIONS}, got {definition!r}"
        )
    return str(definition)


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
    definition: str = "paper",
) -> float:
    """Deficiency-based Q: ``exp(-(CE(noisy -> held_out) - CE(clean -> held_out)))`` (the
    paper's Q = exp(-Delta), Delta clipped at 0), or with ``definition="ratio"`` (ours)
    ``(log V - CE(noisy -> held_out)) / (log V - CE(clean -> held_out))`` clipped to [0, 1].

    Each argument is ``(context ids, targets)`` (`ngram_pairs`, or source/target alignments for
    a seq2seq task). A count model (add-`smoothing`) is fitted on `noisy` and on `clean` (the
    first ``len(noisy)`` pairs, so both see the same D) and scored on clean `held_out` pairs.
    Q = 1 when the corpus is the clean sample; the ratio is 0 when it teaches nothing beyond
    uniform.
    """
    definition = _check_definition(definition)
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
    ce_clean = _cross_entropy(clean, held_out, vocab_size, smoothing)
    if h_max - ce_clean <= 0:
        raise ValueError(
            "clean: a model fitted on the clean data is no better than uniform; Q is undefined"
        )
    ce_noisy = _cross_entropy(noisy, held_out, vocab_size, smoothing)
    return _deficiency_to_q(ce_noisy, ce_clean, h_max, definition)


def markov_noisy_floor(
    source: MarkovSource,
    rate: float,
    corruption: str = "substitute",
    row_length: int = 17,
    token_fraction: float = PAPER_TOKEN_FRACTION,
) -> float:
    """Clean-test cross-entropy (nats) of the Bayes predictor of an order-1 `source` learned from
    infinitely many rows corrupted by `corrupt` (``substitute`` or ``samples``) at `rate`: the
    loss floor a model trained on such data tends to.

    Each bigram of the noisy data has both, only the first, only the second or neither token
    replaced by a uniform one with probabilities ``p11, p10, p01, p00``, so its joint is
    ``p00 J + p10 u pi^T + p01 pi u^T + p11 u u^T`` (u uniform, pi the stationary marginal).
    ``substitute``: ``p11 = p^2``, ``p10 = p01 = p (1 - p)`` (this is ``K J K^T``). ``samples``:
    a fraction eta = `rate` of the rows, each with ``k = corrupted_tokens(row_length)`` of
    its `row_length` positions replaced without replacement, so ``p11 = eta k (k-1) / (n (n-1))``
    and ``p10 = p01 = eta k (n-k) / (n (n-1))``. Scored on clean data the predictor ``P~(k|c)``
    of that joint has cross-entropy ``-sum_ck J_ck log P~(k|c)`` (= the entropy rate at rate 0).
    """
    if not isinstance(source, MarkovSource):
        raise TypeError(f"source: expected a MarkovSource, got {type(source).__name__}")
    if source.order != 1:
        raise ValueError(f"source: expected an order-1 MarkovSource, got order {source.order}")
    corruption_rate_proxy(rate)
    if corruption == "substitute":
        p11, p10 = rate * rate, rate * (1 - rate)
    elif corruption == "samples":
        n = row_length
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 2:
            raise ValueError(f"row_length: expected an int >= 2, got {n!r}")
        if not (isinstance(token_fraction, (int, float)) and 0.0 < token_fraction <= 1.0):
            raise ValueError(f"token_fraction: expected a value in (0, 1], got {token_fraction!r}")
        k = corrupted_tokens(n, token_fraction)
        p11 = rate * k * (k - 1) / (n * (n - 1))
        p10 = rate * k * (n - k) / (n * (n - 1))
    else:
        raise ValueError(f"corruption: expected 'substitute' or 'samples', got {corruption!r}")
    v = source.vocab_size
    joint = source.pi[:, None] * source.P
    pi, u = joint.sum(axis=1), np.full(v, 1.0 / v)
    noisy = (
        (1 - p11 - 2 * p10) * joint
        + p10 * (np.outer(u, joint.sum(axis=0)) + np.outer(pi, u))
        + p11 * np.outer(u, u)
    )
    cond = noisy / noisy.sum(axis=1, keepdims=True)
    return -float((joint * np.log(cond)).sum())


def markov_deficiency(
    source: MarkovSource, rate: float, definition: str = "paper", corruption: str = "substitute"
) -> float:
    """Exact population `deficiency_q` of an order-1 `source` under `corruption` at `rate`
    (``substitute``: i.i.d. uniform substitution; ``samples``: the paper's protocol, rows of 17
    tokens, half of them replaced).

    With CE = `markov_noisy_floor` and H the entropy rate: ``Q = exp(-(CE - H))`` (the paper's
    Q = exp(-Delta)) or, ``definition="ratio"`` (ours), ``Q = (log V - CE) / (log V - H)``.
    """
    definition = _check_definition(definition)
    ce = markov_noisy_floor(source, rate, corruption)
    return _deficiency_to_q(ce, source.entropy_rate, math.log(source.vocab_size), definition)
