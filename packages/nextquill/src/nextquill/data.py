"""NextQuill batches: every prompt twice, with its history block and with exactly that block removed.

An `Example` is four strings, ``prefix + history + suffix`` (the prompt) and ``target`` (the
user's response y). `encode` tokenises each piece on its own and concatenates the ids, so the
counterfactual prompt ``prefix + suffix`` is the full prompt minus exactly the history tokens
(tokenising the joined strings could merge tokens across the block's edges). Both passes end
with the same response tokens; `nextquill.loss` pairs them by order, so the padding side does
not matter (left or right padding give the same loss).

Also here: the two real input formats of the paper's code. `read_reviews` reads Amazon-Reviews
style JSON (a user's ``profile`` list plus the target ``data``), `review_examples` builds the
code's prompt from it (``personal_dataset.PersonalDataset``: item title and description, the
user's past reviews, then the output rating and title), and `character_examples` makes users of
Shakespeare's characters (history = the character's earlier speeches, x = the preceding
speech) for ``--scale small``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

EXAMPLE_FIELDS = ("prefix", "history", "suffix", "target")
IGNORE = -100  # Hugging Face's ignore index for labels


@dataclass(frozen=True)
class Example:
    """One personalisation example: prompt ``prefix + history + suffix``, response ``target``.

    `history` is the block removed for the counterfactual pass (may be empty: a new user);
    `target` is the ground-truth response and may not be empty.
    """

    prefix: str
    history: str
    suffix: str
    target: str

    def __post_init__(self) -> None:
        for name in EXAMPLE_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"{name}: expected a str, got {type(value).__name__}")
        if not self.target.strip():
            raise ValueError(f"target: expected a non-empty response, got {self.target!r}")

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> Example:
        """An Example from a mapping with the keys prefix, history, suffix, target."""
        if not isinstance(row, Mapping):
            raise TypeError(f"row: expected a mapping, got {type(row).__name__}")
        missing = [k for k in EXAMPLE_FIELDS if k not in row]
        if missing:
            raise ValueError(
                f"row: missing field(s) {missing}; expected {list(EXAMPLE_FIELDS)} "
                "(use history='' for a user without history)"
            )
        return cls(*(row[k] for k in EXAMPLE_FIELDS))


def _ids(tokenizer: Any, text: str) -> list[int]:
    if not text:
        return []
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


@dataclass(frozen=True)
class Encoded:
    """One example as token ids: ``with_history`` / ``without_history`` end in `n_target` ids."""

    with_history: list[int]
    without_history: list[int]
    n_target: int


def encode_one(
    example: Example, tokenizer: Any, max_length: int | None = None, add_eos: bool = True
) -> Encoded:
    """Token ids of one example, unpadded (the oracle's input; `encode` pads a batch of them).

    Over-long prompts lose history tokens from the left (the oldest); a prompt that is too
    long even without history raises.
    """
    if not isinstance(example, Example):
        raise TypeError(f"example: expected an Example, got {type(example).__name__}")
    prefix, history = _ids(tokenizer, example.prefix), _ids(tokenizer, example.history)
    suffix, target = _ids(tokenizer, example.suffix), _ids(tokenizer, example.target)
    if not target:
        raise ValueError(f"target: {example.target!r} tokenises to no token")
    if add_eos:
        if tokenizer.eos_token_id is None:
            raise ValueError("tokenizer: add_eos=True needs a tokenizer with an eos_token_id")
        target = [*target, int(tokenizer.eos_token_id)]
    without = prefix + suffix + target
    if max_length is not None:
        if len(without) > max_length:
            raise ValueError(
                f"max_length: {max_length} is shorter than the prompt without history plus "
                f"the target ({len(without)} tokens)"
            )
        keep = max_length - len(without)
        history = history[len(history) - keep :] if keep > 0 else []
    return Encoded(prefix + history + suffix + target, without, len(target))


def _pad(
    rows: Sequence[list[int]], n_targets: Sequence[int], pad_id: int, side: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    length = max(len(r) for r in rows)
    ids = torch.full((len(rows), length), pad_id, dtype=torch.int64)
    mask = torch.zeros((len(rows), length), dtype=torch.int64)
    labels = torch.full((len(rows), length), IGNORE, dtype=torch.int64)
    for i, (row, n) in enumerate(zip(rows, n_targets, strict=True)):
        start = length - len(row) if side == "left" else 0
        ids[i, start : start + len(row)] = torch.tensor(row)
        mask[i, start : start + len(row)] = 1
        labels[i, start + len(row) - n : start + len(row)] = torch.tensor(row[-n:])
    return ids, mask, labels


def collate(
    encoded: Sequence[Encoded], pad_id: int, padding_side: str = "left"
) -> dict[str, torch.Tensor]:
    """Pad `encode_one` outputs into a NextQuill batch (see `encode`)."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side: expected 'left' or 'right', got {padding_side!r}")
    if not encoded:
        raise ValueError("encoded: expected at least one example, got none")
    n = [e.n_target for e in encoded]
    a = _pad([e.with_history for e in encoded], n, int(pad_id), padding_side)
    b = _pad([e.without_history for e in encoded], n, int(pad_id), padding_side)
    return {
        "input_ids": a[0],
        "attention_mask": a[1],
        "labels": a[2],
        "input_ids_without_history": b[0],
        "attention_mask_without_history": b[1],
        "labels_without_history": b[2],
    }


def pad_id_of(tokenizer: Any) -> int:
    """The tokenizer's pad id, else its EOS id (padding is masked out either way)."""
    pad_id = (
        tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    )
    if pad_id is None:
        raise ValueError("tokenizer: needs a pad_token_id or an eos_token_id to pad with")
    return int(pad_id)


def encode(
    examples: Iterable[Example | Mapping[str, Any]],
    tokenizer: Any,
    *,
    padding_side: str = "left",
    max_length: int | None = None,
    add_eos: bool = True,
) -> dict[str, torch.Tensor]:
    """A NextQuill batch: six ``(batch, length)`` int64 tensors.

    ``input_ids``, ``attention_mask``, ``labels`` hold the full prompt plus response;
    the ``*_without_history`` three hold the same with the history block removed. Labels
    are the response ids (and EOS) in Hugging Face's unshifted convention, -100 elsewhere.
    Rows are padded on `padding_side` ("left" as in the paper's code, or "right").
    """
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side: expected 'left' or 'right', got {padding_side!r}")
    if max_length is not None and (
        not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 2
    ):
        raise ValueError(f"max_length: expected None or an int >= 2, got {max_length!r}")
    rows = [e if isinstance(e, Example) else Example.from_dict(e) for e in examples]
    if not rows:
        raise ValueError("examples: expected at least one example, got none")
    enc = [encode_one(e, tokenizer, max_length, add_eos) for e in rows]
    return collate(enc, pad_id_of(tokenizer), padding_side)


# The system prompt of the paper's code (personal_dataset.PersonalDataset, Amazon reviews).
REVIEW_SYSTEM_PROMPT = (
    "Given the title and description of an item, along with the user's past reviews and the "
    "output review rating and review title, generate a personalized item review for the user.\n"
)


def _require(row: Mapping[str, Any], keys: Sequence[str], where: str) -> None:
    missing = [k for k in keys if k not in row]
    if missing:
        raise ValueError(f"{where}: missing field(s) {missing}; expected {list(keys)}")


def read_reviews(path: str | Path) -> list[dict[str, Any]]:
    """Amazon-Reviews-style users: a JSON list (or JSON lines) of ``{"profile": [...], "data": {...}}``.

    Each review (a profile entry or the target ``data``) has ``title``, ``text``, ``rating``,
    ``asin`` and, in the profile, ``timestamp``; item titles/descriptions come either inline
    (``item_title``, ``item_desc``) or from the `meta` mapping of `review_examples`.
    """
    path = Path(path)
    raw = path.read_text(encoding="utf-8")
    try:
        rows = json.loads(raw)
    except json.JSONDecodeError as whole:
        rows = []
        for n, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(
                    f"path: {path} is neither one JSON document ({whole.msg}, line "
                    f"{whole.lineno}) nor JSON lines (line {n}: {e.msg}, column {e.colno})"
                ) from None
    if isinstance(rows, dict):
        rows = [rows]
    if not isinstance(rows, list):
        raise ValueError(f"path: {path} holds {type(rows).__name__}, expected a list of users")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"{path} row {i}: expected a JSON object, got {type(row).__name__}")
        _require(row, ("profile", "data"), f"{path} row {i}")
        if not isinstance(row["profile"], list):
            raise ValueError(f"{path} row {i}: 'profile' must be a list of reviews")
        _require(row["data"], ("title", "text", "rating"), f"{path} row {i} data")
        for j, p in enumerate(row["profile"]):
            _require(p, ("title", "text", "rating"), f"{path} row {i} profile[{j}]")
    return rows


def _item(review: Mapping[str, Any], meta: Mapping[str, tuple[str, str]] | None) -> tuple[str, str]:
    if "item_title" in review:
        return str(review["item_title"]), str(review.get("item_desc", ""))
    if meta is not None and review.get("asin") in meta:
        title, desc = meta[review["asin"]]
        return str(title), str(desc)
    return "", ""


def review_examples(
    rows: Sequence[Mapping[str, Any]],
    meta: Mapping[str, tuple[str, str]] | None = None,
    max_history: int = 8,
    chat: bool = True,
) -> list[Example]:
    """The paper code's review prompt, as Examples (history = the user's newest reviews).

    With `chat` the prompt is wrapped in the Qwen2 chat template of the code
    (``utils/templates.Qwen2PromptTemplate``); the history block is the
    ``[User's Past Reviews]`` section, which the counterfactual pass drops.
    """
    if isinstance(max_history, bool) or not isinstance(max_history, int) or max_history < 0:
        raise ValueError(f"max_history: expected an int >= 0, got {max_history!r}")
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping) or "data" not in row or "profile" not in row:
            raise TypeError(
                f"rows[{i}]: expected a mapping with 'data' and 'profile' (read_reviews' rows), "
                f"got {row!r:.120}"
            )
        data = row["data"]
        profile = sorted(row["profile"], key=lambda p: p.get("timestamp", 0), reverse=True)
        title, desc = _item(data, meta)
        past = "".join(
            f"[Review {i + 1}]:\n"
            f"- [Item Title]: {_item(p, meta)[0]}\n"
            f"- [Item Description]: {_item(p, meta)[1]}\n"
            f"- [Review Rating]: {p['rating']}\n"
            f"- [Review Title]: {p['title']}\n"
            f"- [Review Text]: {p['text']}\n"
            for i, p in enumerate(profile[:max_history])
        )
        history = f"[User's Past Reviews]:\n{past}\n" if past else ""
        prefix = f"[Item Title]: {title}\n[Item Description]: {desc}\n"
        suffix = (
            f"[Output Review Rating]: {data['rating']}\n[Output Review Title]: {data['title']}\n"
        )
        if chat:
            prefix = (
                f"<|im_start|>system\n{REVIEW_SYSTEM_PROMPT}<|im_end|><|im_start|>user\n" + prefix
            )
            suffix += "<|im_end|>\n<|im_start|>assistant\n"
        out.append(Example(prefix, history, suffix, str(data["text"])))
    return out


_SPEAKER = re.compile(r"^([A-Z][A-Za-z .'-]{0,40}):$")


def speeches(text: str) -> list[tuple[str, str]]:
    """``(speaker, speech)`` pairs of a play text in the ``Name:`` layout of shared_core.data."""
    out: list[tuple[str, str]] = []
    speaker, lines = "", list[str]()
    for line in [*text.splitlines(), "END:"]:
        m = _SPEAKER.match(line.strip())
        if m:
            if speaker and lines:
                out.append((speaker, " ".join(lines)))
            speaker, lines = m.group(1), []
        elif line.strip():
            lines.append(line.strip())
    return out


def character_examples(
    text: str,
    min_speeches: int = 20,
    max_history: int = 3,
    max_words: int = 40,
) -> list[tuple[str, Example]]:
    """Shakespeare characters as users: ``(character, Example)`` for each speech with history.

    x is the preceding speech (who said it and what), the history block is the character's
    `max_history` earlier speeches, the target is the speech; speeches are cut to `max_words`
    words. Only characters with at least `min_speeches` speeches count as users.
    """
    pairs = speeches(text)
    counts: dict[str, int] = {}
    for s, _ in pairs:
        counts[s] = counts.get(s, 0) + 1
    earlier: dict[str, list[str]] = {}
    out = []

    def cut(s: str) -> str:
        return " ".join(s.split()[:max_words])

    for i, (who, speech) in enumerate(pairs):
        if counts[who] < min_speeches:
            continue
        past = earlier.setdefault(who, [])
        if past and i > 0:
            prev_who, prev = pairs[i - 1]
            history = "Earlier, " + who + " said:\n" + "".join(f"- {p}\n" for p in past)
            out.append(
                (
                    who,
                    Example(
                        f"{prev_who}: {cut(prev)}\n",
                        history,
                        f"{who}:",
                        " " + cut(speech),
                    ),
                )
            )
        past.append(cut(speech))
        del past[:-max_history]
    return out
