"""A generated key-value retrieval task with the paper's four kinds of context token.

A sequence is a haystack of filler tokens (Zipf-distributed, the *irrelevant* context) into
which key-value records ``SEP k kv`` are planted (``kv`` is a record token that spells both the
key and the value, so one attention layer can retrieve it; a 2-layer model that must
compose an induction circuit for ``SEP k v`` does not learn it within a CPU budget): one *needle* (the supporting evidence) and
several *distractors* of the same shape with other keys (the interference); a few
*low-frequency* tokens from a rare sub-vocabulary are scattered in (the paper's emojis).
The question ``QUERY k`` closes the context and the answer is the needle's value:

    BOS  h h SEP k7 k7v3 h h h SEP k2 k2v9 h r h ... h  QUERY k7 | v3 EOS
         ---------------------- context ----------------------  - query -  answer

Every position carries its kind (`KINDS`), so the noise detector's precision and recall can
be measured against the planted truth. Batches are pure functions of ``(seed, index)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from context_denoising._checks import IGNORE_INDEX

PAD, BOS, EOS, SEP, QUERY = 0, 1, 2, 3, 4
N_SPECIAL = 6
KINDS = ("other", "needle", "distractor", "haystack", "rare")
OTHER, NEEDLE, DISTRACTOR, HAYSTACK, RARE = range(5)


@dataclass(frozen=True)
class RetrievalTask:
    """Vocabulary and shape of the task; the defaults fit a d = 64 two-layer model.

    Token ids: 6 specials, then `n_keys` keys, `n_values` values, `n_filler` haystack words,
    `n_rare` low-frequency tokens and ``n_keys * n_values`` record tokens.
    """

    n_keys: int = 32
    n_values: int = 32
    n_filler: int = 128
    n_rare: int = 32
    min_len: int = 128  # total sequence length, query and answer included
    max_len: int = 256
    n_distractors: int = 4
    n_rare_tokens: int = 4  # low-frequency tokens scattered per sequence
    zipf: float = 1.0  # haystack word frequencies ~ 1 / rank**zipf

    def __post_init__(self) -> None:
        for name in ("n_keys", "n_values", "n_filler", "n_rare", "min_len", "max_len"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        for name in ("n_distractors", "n_rare_tokens"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"{name}: expected a non-negative int, got {v!r}")
        if self.n_distractors + 1 > self.n_keys:
            raise ValueError(
                f"n_distractors: {self.n_distractors} distractors need {self.n_distractors + 1} "
                f"distinct keys, but n_keys is {self.n_keys}"
            )
        need = 1 + 3 * (self.n_distractors + 1) + self.n_rare_tokens + 5
        if self.min_len < need:
            raise ValueError(
                f"min_len: {self.min_len} is too short for the records and the query (>= {need})"
            )
        if self.max_len < self.min_len:
            raise ValueError(f"max_len: expected >= min_len {self.min_len}, got {self.max_len}")

    @property
    def vocab_size(self) -> int:
        return self._pair0 + self.n_keys * self.n_values

    @property
    def _pair0(self) -> int:
        return N_SPECIAL + self.n_keys + self.n_values + self.n_filler + self.n_rare

    def pair_id(self, key: int, value: int) -> int:
        """The record token of (key id, value id)."""
        k, v = key - N_SPECIAL, value - N_SPECIAL - self.n_keys
        return self._pair0 + k * self.n_values + v

    @property
    def key_ids(self) -> np.ndarray:
        return N_SPECIAL + np.arange(self.n_keys)

    @property
    def value_ids(self) -> np.ndarray:
        return N_SPECIAL + self.n_keys + np.arange(self.n_values)

    @property
    def filler_ids(self) -> np.ndarray:
        return N_SPECIAL + self.n_keys + self.n_values + np.arange(self.n_filler)

    @property
    def rare_ids(self) -> np.ndarray:
        return N_SPECIAL + self.n_keys + self.n_values + self.n_filler + np.arange(self.n_rare)


def sample_sequence(
    task: RetrievalTask, rng: np.random.Generator
) -> tuple[list[int], list[int], int]:
    """``(tokens, kinds, answer_position)`` of one example."""
    length = int(rng.integers(task.min_len, task.max_len + 1))
    n_ctx = length - 4  # BOS + context + QUERY k v EOS
    keys = rng.choice(task.key_ids, size=task.n_distractors + 1, replace=False)
    values = rng.choice(task.value_ids, size=task.n_distractors + 1, replace=True)
    n_records = len(keys)
    n_hay = n_ctx - 3 * n_records
    ranks = np.arange(1, task.n_filler + 1, dtype=np.float64) ** -task.zipf
    hay = rng.choice(task.filler_ids, size=n_hay, p=ranks / ranks.sum())
    hay_kinds = np.full(n_hay, HAYSTACK)
    rare_at = rng.choice(n_hay, size=min(task.n_rare_tokens, n_hay), replace=False)
    hay[rare_at] = rng.choice(task.rare_ids, size=len(rare_at))
    hay_kinds[rare_at] = RARE
    # records go between haystack words, in random order, at distinct gaps
    gaps = np.sort(rng.choice(n_hay + 1, size=n_records, replace=False))
    order = rng.permutation(n_records)  # order[j] == 0: the needle is the j-th record
    tokens, kinds = [BOS], [OTHER]
    prev = 0
    for j, gap in enumerate(gaps):
        tokens += hay[prev:gap].tolist()
        kinds += hay_kinds[prev:gap].tolist()
        r = order[j]
        tokens += [SEP, int(keys[r]), task.pair_id(int(keys[r]), int(values[r]))]
        kinds += [NEEDLE if r == 0 else DISTRACTOR] * 3
        prev = gap
    tokens += hay[prev:].tolist()
    kinds += hay_kinds[prev:].tolist()
    # the answer is predicted AT the query key: one attention layer matches k to its record
    tokens += [QUERY, int(keys[0]), int(values[0]), EOS]
    kinds += [OTHER] * 4
    return tokens, kinds, len(tokens) - 2


def make_batch(
    task: RetrievalTask, batch_size: int, seed: int, index: int = 0
) -> dict[str, torch.Tensor]:
    """A right-padded batch: ``input_ids, attention_mask, labels, context_mask, kinds`` (batch, time).

    `labels` hold the answer value only (-100 elsewhere); `context_mask` marks the context
    (kinds needle/distractor/haystack/rare); `kinds` indexes `KINDS`. A pure function of
    ``(task, batch_size, seed, index)``.
    """
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size: expected a positive int, got {batch_size!r}")
    rng = np.random.default_rng([seed, index])
    rows = [sample_sequence(task, rng) for _ in range(batch_size)]
    T = max(len(t) for t, _, _ in rows)
    ids = torch.full((batch_size, T), PAD, dtype=torch.long)
    kinds = torch.full((batch_size, T), OTHER, dtype=torch.long)
    attn = torch.zeros((batch_size, T), dtype=torch.long)
    labels = torch.full((batch_size, T), IGNORE_INDEX, dtype=torch.long)
    for b, (toks, knd, ans) in enumerate(rows):
        n = len(toks)
        ids[b, :n] = torch.tensor(toks)
        kinds[b, :n] = torch.tensor(knd)
        attn[b, :n] = 1
        labels[b, ans] = toks[ans]
    context = (kinds != OTHER) & (attn == 1)
    return {
        "input_ids": ids,
        "attention_mask": attn,
        "labels": labels,
        "context_mask": context,
        "kinds": kinds,
    }
