"""The pair datasets CROME trains on: (prompt, chosen, rejected, label, provenance) rows.

``label="preference"`` means chosen > rejected (D_pref and D_causal); ``label="tie"`` means the
two answers should get equal reward (D_neutral), and then "chosen"/"rejected" are just the
first and second answer. Rows are stored as JSONL (always) or Parquet (with ``pyarrow``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from shared_core.atomic import atomic_path
from shared_core.data import read_jsonl, write_jsonl

LABELS = ("preference", "tie")


@dataclass(frozen=True)
class PairRow:
    """One training or evaluation pair.

    `provenance` says where the pair came from: ``"original"``, ``"causal-upgrade"``,
    ``"causal-degrade"``, ``"neutral-iqn"`` (irrelevant-query neutral) or
    ``"neutral-causal-aligned"``; `meta` holds free-form details (rubric, source row, ...).
    `subset` is the RewardBench-style subset name used for evaluation tables.
    """

    prompt: str
    chosen: str
    rejected: str
    label: str = "preference"
    provenance: str = "original"
    subset: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("prompt", "chosen", "rejected"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"{name}: expected a string, got {type(value).__name__}")
            if not value.strip():
                raise ValueError(f"{name}: expected a non-empty string, got {value!r}")
        if self.label not in LABELS:
            raise ValueError(f"label: expected one of {LABELS}, got {self.label!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "row") -> PairRow:
        if not isinstance(d, dict):
            raise TypeError(f"{where}: expected a JSON object, got {type(d).__name__}")
        missing = [k for k in ("prompt", "chosen", "rejected") if k not in d]
        if missing:
            raise ValueError(
                f"{where}: missing field(s) {missing}; expected prompt, chosen, rejected"
            )
        meta = d.get("meta") or {}
        if isinstance(meta, str):
            try:
                meta = json.loads(meta)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: 'meta' is not valid JSON ({e.msg})") from None
        if not isinstance(meta, dict):
            raise TypeError(f"{where}: 'meta' must be a JSON object, got {type(meta).__name__}")
        return cls(
            prompt=d["prompt"],
            chosen=d["chosen"],
            rejected=d["rejected"],
            label=d.get("label") or "preference",
            provenance=d.get("provenance") or "original",
            subset=d.get("subset") or "",
            meta=dict(meta),
        )


def write_pairs(path: str | os.PathLike[str], rows: Iterable[PairRow]) -> Path:
    """Write rows atomically as JSONL (``.jsonl``) or Parquet (``.parquet``)."""
    p = Path(path)
    rows = check_rows(list(rows), allow_empty=True)
    if p.suffix == ".jsonl":
        return write_jsonl(p, (r.to_dict() for r in rows))
    if p.suffix == ".parquet":
        pa, pq = _pyarrow()
        records = [{**r.to_dict(), "meta": json.dumps(r.meta)} for r in rows]
        table = pa.Table.from_pylist(records)
        with atomic_path(p) as tmp:
            pq.write_table(table, str(tmp))
        return p
    raise ValueError(f"path: expected a .jsonl or .parquet file name, got {p.name!r}")


def read_pairs(path: str | os.PathLike[str]) -> list[PairRow]:
    """Read rows written by `write_pairs`, or any JSONL/JSON/Parquet file with the same columns.

    RewardBench files (columns prompt, chosen, rejected, subset, ...) read as preference rows.
    A file with no row is an error (an empty data set would otherwise train or score nothing).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no such file {p}")
    rows = _read(p)
    if not rows:
        raise ValueError(
            f"path: {p} holds no rows; expected at least one (prompt, chosen, rejected) row"
        )
    return rows


def _read(p: Path) -> list[PairRow]:
    if p.suffix == ".jsonl":
        if not p.read_text(encoding="utf-8").strip():
            return []  # read_pairs says the file holds no rows
        records = read_jsonl(p, format="preference")
        return [
            PairRow.from_dict(d, where=f"{p.name} line {n}")
            for d, n in zip(records.records, records.lines, strict=True)
        ]
    if p.suffix == ".json":
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ValueError(f"path: {p} is not valid JSON ({e.msg}, line {e.lineno})") from None
        if isinstance(data, dict) and "rows" in data:
            data = data["rows"]
        if not isinstance(data, list):
            raise ValueError(f"path: {p} should hold a list of rows (or {{'rows': [...]}})")
        return [PairRow.from_dict(d, where=f"{p.name} row {i}") for i, d in enumerate(data)]
    if p.suffix == ".parquet":
        _, pq = _pyarrow()
        records = pq.read_table(str(p)).to_pylist()
        return [PairRow.from_dict(d, where=f"{p.name} row {i}") for i, d in enumerate(records)]
    raise ValueError(f"path: expected a .jsonl, .json or .parquet file, got {p.name!r}")


def check_rows(
    rows: Sequence[PairRow], name: str = "rows", allow_empty: bool = False
) -> list[PairRow]:
    """`rows` as a list, after checking it is a (non-empty) sequence of `PairRow`."""
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence):
        raise TypeError(f"{name}: expected a sequence of PairRow, got {type(rows).__name__}")
    if not rows and not allow_empty:
        raise ValueError(f"{name}: expected at least one pair, got an empty sequence")
    for i, r in enumerate(rows):
        if not isinstance(r, PairRow):
            raise TypeError(f"{name}[{i}]: expected a PairRow, got {type(r).__name__}")
    return list(rows)


def split_by_label(rows: Sequence[PairRow]) -> tuple[list[PairRow], list[PairRow]]:
    """(preference rows, tie rows)."""
    rows = check_rows(rows, allow_empty=True)
    return [r for r in rows if r.label == "preference"], [r for r in rows if r.label == "tie"]


def _pyarrow() -> tuple[Any, Any]:
    from shared_core.data import require_extra

    # the workspace root does not install `parquet`: only crome's own sync adds it
    require_extra("crome", "parquet", "pyarrow", "Parquet input/output", in_root=False)
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pa, pq
