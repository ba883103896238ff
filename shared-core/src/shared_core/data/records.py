"""Text for language models: a plain UTF-8 corpus, and JSONL records in the Hugging Face
`datasets` / TRL dataset conventions.

The four JSONL formats, told by the keys of the first record (TRL's names):

- ``"language_modeling"``: ``{"text": str}``;
- ``"prompt_completion"``: ``{"prompt": P, "completion": P}``;
- ``"conversational"``: ``{"messages": [{"role": str, "content": str}, ...]}``;
- ``"preference"``: ``{"prompt": P, "chosen": P, "rejected": P}``,

where ``P`` is a string, or (TRL's conversational form) a list of messages. Every record must
hold its format's keys with those types; other keys are kept as they are.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared_core.atomic import atomic_write_text
from shared_core.data.read_result import ReadResult, nonempty_file
from shared_core.errors import InputError

JSONL_FORMATS: dict[str, tuple[str, ...]] = {
    "preference": ("prompt", "chosen", "rejected"),
    "prompt_completion": ("prompt", "completion"),
    "conversational": ("messages",),
    "language_modeling": ("text",),
}
"""TRL's format name -> the keys each record holds (checked in this order)."""


@dataclass
class JsonlRecords(ReadResult[dict[str, Any]]):
    """`ReadResult` of `read_jsonl`, with the `format` (a key of `JSONL_FORMATS`) and the
    1-based line of each record in `lines`."""

    format: str = ""
    lines: list[int] = field(default_factory=list)


def read_text(path: str | os.PathLike[str]) -> str:
    """A plain text corpus: the whole file as UTF-8 text (ValueError if it is empty, all
    white space, or not UTF-8, naming the line of the first bad byte)."""
    p = nonempty_file(path, "UTF-8 text")
    data = p.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(
            f"{p}, line {line}: byte {data[e.start : e.start + 1]!r} is not UTF-8; "
            "expected UTF-8 text"
        ) from None


def jsonl_format(record: Mapping[str, Any]) -> str:
    """The TRL format of one record (a key of `JSONL_FORMATS`); ValueError if none fits."""
    for name, keys in JSONL_FORMATS.items():
        if all(k in record for k in keys):
            return name
    raise InputError(
        f"keys {sorted(record)} fit no dataset format; expected "
        + "; ".join(f"{n}: {list(k)}" for n, k in JSONL_FORMATS.items())
    )


def _check_messages(value: Any, key: str) -> None:
    if not isinstance(value, list) or not value:
        raise InputError(f"{key!r}: expected a non-empty list of messages, got {value!r:.60}")
    for i, m in enumerate(value):
        if not (
            isinstance(m, dict)
            and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str)
        ):
            raise InputError(
                f"{key!r}[{i}]: expected {{'role': str, 'content': str}}, got {m!r:.60}"
            )


def check_record(record: Any, format: str) -> None:
    """ValueError unless `record` is a JSON object holding `format`'s keys with their types."""
    if format not in JSONL_FORMATS:
        raise InputError(f"format: expected one of {list(JSONL_FORMATS)}, got {format!r}")
    if not isinstance(record, dict):
        raise InputError(f"expected a JSON object, got {type(record).__name__}")
    missing = [k for k in JSONL_FORMATS[format] if k not in record]
    if missing:
        raise InputError(
            f"missing field(s) {missing}; expected the {format} format's keys "
            f"{list(JSONL_FORMATS[format])} (set by the first record)"
        )
    for key in JSONL_FORMATS[format]:
        value = record[key]
        if key == "messages" or (key != "text" and isinstance(value, list)):
            _check_messages(value, key)
        elif not isinstance(value, str):
            raise InputError(f"{key!r}: expected a string, got {type(value).__name__}")


def read_jsonl(
    path: str | os.PathLike[str], *, format: str | None = None, skip_invalid: bool = False
) -> JsonlRecords:
    """The records of a JSONL file (one JSON object a line; blank lines are ignored).

    format: one of `JSONL_FORMATS`; by default the first valid record's keys decide it, and
    every record must then have it. A line that is not JSON, not an object, or lacks the
    format's keys is a malformed record: one ValueError naming the file and line, or skipped
    and counted with ``skip_invalid=True``. Every key of a record is kept.
    """
    if format is not None and format not in JSONL_FORMATS:
        raise InputError(f"format: expected one of {list(JSONL_FORMATS)}, got {format!r}")
    p = nonempty_file(path, "JSON records, one a line")
    result = JsonlRecords(p, format=format or "")
    with open(p, encoding="utf-8") as f:
        for line, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
                if not isinstance(record, dict):
                    raise InputError(f"expected a JSON object, got {type(record).__name__}")
                if not result.format:
                    result.format = jsonl_format(record)
                check_record(record, result.format)
            except json.JSONDecodeError as e:
                result.reject(
                    line, f"not valid JSON ({e.msg}); expected a JSON object", skip_invalid
                )
                continue
            except ValueError as e:
                result.reject(line, str(e), skip_invalid)
                continue
            result.records.append(record)
            result.lines.append(line)
    result.finish("at least one JSON record")
    return result


def write_jsonl(
    path: str | os.PathLike[str], records: Iterable[Mapping[str, Any]], *, format: str | None = None
) -> Path:
    """Write `records` atomically as JSONL (UTF-8, one object a line, non-ASCII kept).

    format: when given, every record is checked against it first (ValueError naming the
    record's index), so the file reads back with ``read_jsonl(path, format=format)``.
    """
    lines = []
    for i, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise TypeError(f"records[{i}]: expected a mapping, got {type(record).__name__}")
        if format is not None:
            try:
                check_record(dict(record), format)
            except ValueError as e:
                raise InputError(f"records[{i}]: {e}") from None
        lines.append(json.dumps(dict(record), ensure_ascii=False) + "\n")
    return atomic_write_text(path, "".join(lines))
