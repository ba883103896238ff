"""Metric tables: the subset V_d of a vocabulary and the distance d(v, g) between its tokens.

DIST2Loss needs, at every position whose label g lies in V_d, the distances d(v, g) for all
v in V_d. They never change during training, so a table stores the whole (K, K) matrix
(K = |V_d|) once, in float64, and the loss gathers one row per metric position.

Three constructions follow the paper's three kinds of metric tokens:

- numbers: d(v, g) = (value(v) - value(g))^2, so exp(-d/tau) is a discretised Gaussian of
  variance tau/2 (`number_table`, or `number_table_from_tokenizer` for a real tokenizer);
- coordinates: Euclidean distance between the points the tokens stand for (`coordinate_table`);
- VQ codes: squared Euclidean distance between codebook embeddings (`vq_table`), with tau
  chosen by entropy matching (`entropy_matched_tau`) because its scale depends on the codebook.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from dist2loss._checks import check_positive_int, check_tau

DISTANCES = ("squared", "euclidean", "absolute")
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True, eq=False)
class MetricTable:
    """V_d inside a vocabulary of `vocab_size` tokens and the distances between its members.

    Attributes:
        token_ids: (K,) int64, the vocabulary ids of V_d, distinct, in ``[0, vocab_size)``.
        distance: (K, K) float64, ``distance[i, j] = d(token_ids[i], token_ids[j])``,
            non-negative, zero on the diagonal.
        vocab_size: size of the model's output vocabulary (the logits' last dimension).
        values: (K,) or (K, D) float64, what the tokens stand for (numbers, points,
            embeddings); kept for decoding predictions.
        kind: a label for messages and reports ("number", "coordinate", "vq", ...).
    """

    token_ids: torch.Tensor
    distance: torch.Tensor
    vocab_size: int
    values: torch.Tensor
    kind: str = "custom"
    _slot: torch.Tensor = field(init=False, repr=False)
    _cache: dict[tuple[Any, ...], Any] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        check_positive_int("vocab_size", self.vocab_size)
        ids = self.token_ids
        if not isinstance(ids, torch.Tensor) or ids.ndim != 1 or ids.dtype != torch.int64:
            raise TypeError(
                f"token_ids: expected a 1-D int64 tensor, got "
                f"{getattr(ids, 'dtype', type(ids).__name__)} of shape {tuple(getattr(ids, 'shape', ()))}"
            )
        k = ids.numel()
        if k < 2:
            raise ValueError(f"token_ids: expected at least 2 metric tokens, got {k}")
        if int(ids.min()) < 0 or int(ids.max()) >= self.vocab_size:
            raise ValueError(
                f"token_ids: expected ids in [0, {self.vocab_size}), got range "
                f"[{int(ids.min())}, {int(ids.max())}]"
            )
        if torch.unique(ids).numel() != k:
            raise ValueError("token_ids: expected distinct ids, got repeated ones")
        d = self.distance
        if not isinstance(d, torch.Tensor) or d.shape != (k, k):
            raise ValueError(
                f"distance: expected a ({k}, {k}) tensor for {k} metric tokens, got "
                f"{tuple(getattr(d, 'shape', ()))}"
            )
        if not torch.isfinite(d).all() or bool((d < 0).any()):
            raise ValueError("distance: expected finite, non-negative distances")
        if bool(torch.diagonal(d).abs().max() > 0):
            raise ValueError("distance: expected d(v, v) = 0 on the diagonal")
        slot = torch.full((self.vocab_size,), -1, dtype=torch.int64)
        slot[ids] = torch.arange(k)
        object.__setattr__(self, "_slot", slot)

    @property
    def size(self) -> int:
        """K = |V_d|."""
        return int(self.token_ids.numel())

    def slot(self, device: torch.device) -> torch.Tensor:
        """(vocab_size,) int64: the index of each token inside V_d, or -1 outside it."""
        return self._on("slot", self._slot, device, torch.int64)

    def ids_on(self, device: torch.device) -> torch.Tensor:
        return self._on("ids", self.token_ids, device, torch.int64)

    def distance_on(self, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        return self._on("dist", self.distance, device, dtype)

    def neighbors(self, k: int, device: torch.device) -> torch.Tensor:
        """(K, k + 1) int64 slots: column 0 is the token itself, then its k nearest members of
        V_d by distance (ties in table order): the neighbor negatives of `dist2_loss`."""
        key = ("neighbors", k, str(device))
        if key not in self._cache:
            d = self.distance.clone()
            d.fill_diagonal_(-1.0)  # the token itself first, even when another is at distance 0
            order = torch.argsort(d, dim=-1, stable=True)[:, : k + 1]
            self._cache[key] = order.to(device)
        out: torch.Tensor = self._cache[key]
        return out

    def _on(self, name: str, t: torch.Tensor, device: torch.device, dtype: torch.dtype) -> Any:
        key = (name, str(device), dtype)
        if key not in self._cache:
            self._cache[key] = t.to(device=device, dtype=dtype)
        return self._cache[key]


def pairwise_distance(points: torch.Tensor, distance: str) -> torch.Tensor:
    """(K, K) float64 distances between the rows of `points` ((K,) or (K, D))."""
    if distance not in DISTANCES:
        raise ValueError(f"distance: expected one of {DISTANCES}, got {distance!r}")
    x = points.to(torch.float64)
    x = x[:, None] if x.ndim == 1 else x
    sq = ((x[:, None, :] - x[None, :, :]) ** 2).sum(
        -1
    )  # exact: no |a|^2 + |b|^2 - 2ab cancellation
    if distance == "squared":
        return sq
    if distance == "euclidean":
        return sq.sqrt()
    if x.shape[1] != 1:
        raise ValueError(f"distance: 'absolute' needs scalar values, got dimension {x.shape[1]}")
    return sq.sqrt()


def _as_points(name: str, values: Any, k: int | None, ndim: tuple[int, ...]) -> torch.Tensor:
    t = torch.as_tensor(values, dtype=torch.float64)
    if t.ndim not in ndim:
        raise ValueError(
            f"{name}: expected a tensor with ndim in {ndim}, got shape {tuple(t.shape)}"
        )
    if k is not None and t.shape[0] != k:
        raise ValueError(f"{name}: expected {k} rows (one per token id), got {t.shape[0]}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return t


def _as_ids(token_ids: Any) -> torch.Tensor:
    ids = torch.as_tensor(token_ids)
    if ids.dtype.is_floating_point or ids.dtype == torch.bool:
        raise TypeError(f"token_ids: expected integer ids, got dtype {ids.dtype}")
    return ids.to(torch.int64).reshape(-1)


def number_table(
    values: Mapping[int, float], vocab_size: int, distance: str = "squared"
) -> MetricTable:
    """A table for tokens that stand for numbers: ``{token_id: value}``.

    The paper's distance for numbers is the squared difference (the default); "absolute"
    is there for comparison with losses built on |v - g| (ntloss).
    """
    if not isinstance(values, Mapping) or not values:
        raise ValueError(f"values: expected a non-empty mapping token_id -> number, got {values!r}")
    ids = _as_ids(list(values.keys()))
    vals = _as_points("values", [float(v) for v in values.values()], ids.numel(), (1,))
    return MetricTable(ids, pairwise_distance(vals, distance), vocab_size, vals, "number")


def number_table_from_tokenizer(
    tokenizer: Any,
    *,
    leading_space: bool = False,
    leading_zeros: bool = False,
    vocab_size: int | None = None,
) -> MetricTable:
    """The pure-digit tokens of a Hugging Face tokenizer, valued as integers.

    A token belongs to V_d when its text (``tokenizer.convert_tokens_to_string``) is one or
    more ASCII digits; with ``leading_space=True`` a text of one space then digits (GPT-2's
    ``Ġ42``) counts too.

    Tokens with a leading zero ("00", "007": 81 of GPT-2's 994 pure-digit tokens) are left
    out by default: valued by ``int()`` they would sit at distance 0 from "0" and "7" and
    take their target mass (for gold "0", p_d would put 0.095 on "0" and 0.76 on the 16
    tokens "00".."0000000000000000"). ``leading_zeros=True`` keeps them with their integer
    value, the circulating reference code's behaviour (version 0.1.0's default).
    """
    if not hasattr(tokenizer, "get_vocab") or not hasattr(tokenizer, "convert_tokens_to_string"):
        raise TypeError(
            f"tokenizer: expected a Hugging Face tokenizer (get_vocab, convert_tokens_to_string), "
            f"got {type(tokenizer).__name__}"
        )
    size = len(tokenizer) if vocab_size is None else vocab_size
    found: dict[int, float] = {}
    for token, idx in tokenizer.get_vocab().items():
        if not any(c in "0123456789" for c in token):
            continue  # byte-level and sentencepiece vocabularies keep ASCII digits as they are
        text = tokenizer.convert_tokens_to_string([token])
        if leading_space and text.startswith(" "):
            text = text[1:]
        if not _DIGITS.fullmatch(text) or idx >= size:
            continue
        if leading_zeros or len(text) == 1 or text[0] != "0":
            found[int(idx)] = float(int(text))
    if len(found) < 2:
        raise ValueError(f"tokenizer: found {len(found)} pure-digit tokens; need at least 2")
    return number_table(dict(sorted(found.items())), size)


def coordinate_table(
    token_ids: Sequence[int] | torch.Tensor, points: Any, vocab_size: int
) -> MetricTable:
    """Tokens that stand for points (K, D) (or scalars (K,)): Euclidean distance."""
    ids = _as_ids(token_ids)
    pts = _as_points("points", points, ids.numel(), (1, 2))
    return MetricTable(ids, pairwise_distance(pts, "euclidean"), vocab_size, pts, "coordinate")


def vq_table(
    token_ids: Sequence[int] | torch.Tensor, embeddings: Any, vocab_size: int
) -> MetricTable:
    """Tokens that are VQ codes with codebook `embeddings` (K, D): squared Euclidean distance."""
    ids = _as_ids(token_ids)
    emb = _as_points("embeddings", embeddings, ids.numel(), (2,))
    return MetricTable(ids, pairwise_distance(emb, "squared"), vocab_size, emb, "vq")


def target_entropy(distance: torch.Tensor, tau: float) -> float:
    """Mean over ground truths g of H(p_d(. | g)) in nats, p_d = softmax(-d(., g) / tau)."""
    logp = torch.log_softmax(-distance.to(torch.float64) / tau, dim=-1)
    return float(-(logp.exp() * logp).sum(-1).mean())


def entropy_matched_tau(
    table: MetricTable | torch.Tensor, entropy: float, *, tol: float = 1e-6, max_iter: int = 200
) -> float:
    """The tau at which the targets' mean entropy (nats) equals `entropy`: the paper's rule
    for codebooks, whose distance scale has no natural unit.

    Each row's entropy grows monotonically with tau (a Gibbs distribution heats up), from
    log(#nearest ties) at tau -> 0 to log K at tau -> inf, so the mean does too and
    bisection on log tau finds the unique solution.
    """
    d = table.distance if isinstance(table, MetricTable) else table
    k = d.shape[-1]
    if not isinstance(entropy, (int, float)) or not math.isfinite(entropy):
        raise ValueError(f"entropy: expected a finite number of nats, got {entropy!r}")
    lo_h = float(torch.log((d == d.min(-1, keepdim=True).values).sum(-1).double()).mean())
    if not lo_h < entropy < math.log(k):
        raise ValueError(
            f"entropy: expected a value in ({lo_h:.6g}, log K = {math.log(k):.6g}) nats for "
            f"K = {k} tokens, got {entropy!r}"
        )
    positive = d[d > 0]
    scale = float(positive.median())
    lo, hi = math.log(scale) - 60.0, math.log(scale) + 60.0
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        h = target_entropy(d, math.exp(mid))
        if abs(h - entropy) < tol:
            break
        lo, hi = (mid, hi) if h < entropy else (lo, mid)
    tau = math.exp(mid)
    check_tau(tau)
    return tau


def table_from_json(path: str | Any, tokenizer: Any, vocab_size: int | None = None) -> MetricTable:
    """A user's table from a JSON object ``{token: value}`` or ``{token: [x, y, ...]}``.

    Keys are tokens of `tokenizer`'s vocabulary as it spells them (``tokenizer.get_vocab()``);
    numbers give a `number_table` (d = (v - g)^2), lists of one length a `coordinate_table`
    (Euclidean d). An unknown token, a mix of numbers and points, or anything else is a
    ValueError naming the file and the key.
    """
    import json
    from pathlib import Path

    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}: not valid JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(data, dict) or len(data) < 2:
        raise ValueError(f"{p}: expected a JSON object of at least 2 tokens -> values")
    vocab = tokenizer.get_vocab()
    size = len(tokenizer) if vocab_size is None else vocab_size
    ids, values = [], []
    for token, value in data.items():
        if token not in vocab:
            raise ValueError(f"{p}: token {token!r} is not in the tokenizer's vocabulary")
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        is_point = (
            isinstance(value, list)
            and value
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value)
        )
        if not (is_number or is_point):
            raise ValueError(
                f"{p}: {token!r}: expected a number or a list of numbers, got {value!r}"
            )
        ids.append(vocab[token])
        values.append(value)
    kinds = {isinstance(v, list) for v in values}
    if len(kinds) > 1:
        raise ValueError(f"{p}: expected all numbers or all points, got a mix")
    if kinds == {True}:
        if len({len(v) for v in values}) > 1:
            raise ValueError(
                f"{p}: expected points of one dimension, got {sorted({len(v) for v in values})}"
            )
        return coordinate_table(ids, values, size)
    return number_table(dict(zip(ids, values, strict=True)), size)
