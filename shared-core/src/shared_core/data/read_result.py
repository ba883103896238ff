"""What a reader of a user's file returns: the records, and every record it skipped and why.

A malformed record is one `ValueError` naming the file, the line (or record) number and what
was expected; with ``skip_invalid=True`` the reader skips it instead and lists it here, so the
caller can print the count and write `ReadResult.metrics()` into its run's metrics (never a
silent drop).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from shared_core.errors import InputError

T = TypeVar("T")


@dataclass
class ReadResult(Generic[T]):
    """`records` read from `path`; `skipped` holds ``(number, reason)`` per skipped record.

    `unit` says what `number` counts: ``"line"`` (1-based line of a text file) or
    ``"record"`` (1-based record of an SDF file, an ASE database, an image folder).
    """

    path: Path
    records: list[T] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    unit: str = "line"

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[T]:
        return iter(self.records)

    @property
    def n_skipped(self) -> int:
        return len(self.skipped)

    def metrics(self) -> dict[str, Any]:
        """``{"read": n, "skipped": k, "skipped_records": [{unit: number, "reason": ...}]}``
        for a run's metrics file."""
        return {
            "path": str(self.path),
            "read": len(self.records),
            "skipped": len(self.skipped),
            "skipped_records": [{self.unit: n, "reason": r} for n, r in self.skipped],
        }

    def reject(self, number: int, reason: str, skip_invalid: bool) -> None:
        """Skip record `number` (when `skip_invalid`) or raise the one ValueError naming it."""
        if not skip_invalid:
            raise InputError(f"{self.path}, {self.unit} {number}: {reason}")
        self.skipped.append((number, reason))

    def finish(self, expected: str) -> ReadResult[T]:
        """Self, after checking that at least one record was read (`expected` says what)."""
        if not self.records:
            why = f"all {self.n_skipped} records were invalid" if self.skipped else "no record"
            raise InputError(f"path: {self.path} holds {why}; expected {expected}")
        return self


def nonempty_file(path: str | os.PathLike[str], expected: str) -> Path:
    """`path` as a Path, after checking that it is a file with something in it.

    Raises FileNotFoundError for a missing file and ValueError naming the file and `expected`
    (what it should hold) for an empty or all-white-space one.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no such file {p}")
    with open(p, "rb") as f:
        head = f.read(1 << 16)
        while head and not head.strip():
            head = f.read(1 << 16)
    if not head.strip():
        raise InputError(f"path: {p} is empty; expected {expected}")
    return p
