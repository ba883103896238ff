"""A user's CSV as the matrices `ExplainableMixture` takes: named feature columns, a target
column, one clear error per kind of bad cell.

`read_table` reads with the standard library's ``csv`` module (no pandas needed). Errors name
the file, the column and the row (the file's line number: the header is line 1): a missing
target or feature column, a cell that is not a number (or, with ``one_hot``, its column
expanded into one 0/1 column per value, named ``column=value``), an empty or NaN cell (or,
with ``dropna``, its row dropped and counted).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

import numpy as np

__all__ = ["Table", "read_table"]

_MISSING = frozenset({"", "nan", "NaN", "NA", "N/A", "null", "None"})


@dataclass(frozen=True)
class Table:
    """Features ``X (n, d)``, targets ``y (n, d_y)`` or None, their names, the kept rows'
    line numbers in the file ``(n,)``, how many rows `dropna` dropped."""

    X: np.ndarray
    y: np.ndarray | None
    feature_names: tuple[str, ...]
    target_names: tuple[str, ...]
    lines: np.ndarray
    dropped: int = 0
    categories: dict[str, list[str]] | None = None
    """The one-hot columns and their values (``{"colour": ["blue", "red"]}``), or None."""


def _number(cell: str) -> float | None:
    """The cell as a float; None when it is not a number; NaN when it is missing."""
    text = cell.strip()
    if text in _MISSING:
        return math.nan
    try:
        value = float(text)
    except ValueError:
        return None
    return value


def read_table(
    path: str | PathLike[str],
    target: Sequence[str] | str | None = None,
    features: Sequence[str] | None = None,
    *,
    dropna: bool = False,
    one_hot: bool = False,
    categories: dict[str, Sequence[str]] | None = None,
) -> Table:
    """Read `path` into a `Table`.

    Args:
        target: the target column(s); None reads features only (for `predict`).
        features: the feature columns, in order; None takes every other column.
        dropna: drop rows with an empty or NaN cell in a used column (else an error naming
            the row and the column).
        one_hot: expand a non-numeric feature column into one 0/1 column per value (else an
            error naming the column).
        categories: the values of each one-hot column, as a fitted model recorded them (a
            value not among them is an error); None learns them from this file.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"data: no file {p}")
    with open(p, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        rows = list(reader)
    if not header:
        raise ValueError(f"data: {p.name} is empty (expected a header row of column names)")
    header = [h.strip() for h in header]
    targets = [target] if isinstance(target, str) else list(target or [])
    missing = [c for c in targets if c not in header]
    if missing:
        raise ValueError(
            f"target: column {missing[0]!r} is not in {p.name}; its columns are {header}"
        )
    names = [c for c in header if c not in targets] if features is None else list(features)
    absent = [c for c in names if c not in header]
    if absent:
        raise ValueError(
            f"features: column {absent[0]!r} is not in {p.name}; its columns are {header}"
        )
    if not names:
        raise ValueError(f"features: {p.name} has no column besides the target {targets}")
    if not rows:
        raise ValueError(f"data: {p.name} has a header but no rows")
    width = len(header)
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(
                f"data: {p.name}, row {i + 2}: expected {width} cells (as the header), got {len(row)}"
            )
    index = {c: j for j, c in enumerate(header)}
    seen: dict[str, list[str]] = {k: list(v) for k, v in (categories or {}).items()}
    columns: dict[str, np.ndarray] = {}
    out_names: list[str] = []
    for name in [*names, *targets]:
        raw = [row[index[name]] for row in rows]
        parsed = [_number(c) for c in raw]
        bad = [i for i, v in enumerate(parsed) if v is None]
        is_feature = name in names
        if (bad and is_feature and one_hot) or (is_feature and name in seen):
            values = seen.get(name) or sorted({c.strip() for c in raw} - _MISSING)
            seen[name] = values
            unknown = [
                i
                for i, c in enumerate(raw)
                if c.strip() not in values and c.strip() not in _MISSING
            ]
            if unknown:
                i = unknown[0]
                raise ValueError(
                    f"{p.name}, row {i + 2}, column {name!r}: value {raw[i]!r} was not seen in "
                    f"training (its values: {values})"
                )
            for value in values:
                hot = np.array(
                    [math.nan if c.strip() in _MISSING else float(c.strip() == value) for c in raw]
                )
                columns[f"{name}={value}"] = hot
                out_names.append(f"{name}={value}")
            continue
        if bad:
            i = bad[0]
            what = "feature" if is_feature else "target"
            hint = " (or pass --one-hot to encode it)" if is_feature else ""
            raise ValueError(
                f"{p.name}, row {i + 2}, column {name!r}: expected a number in this {what} "
                f"column, got {raw[i]!r}{hint}"
            )
        columns[name] = np.array(parsed, dtype=np.float64)
        if is_feature:
            out_names.append(name)
    keep = np.ones(len(rows), dtype=bool)
    for name, column in columns.items():
        nan = ~np.isfinite(column)
        if nan.any() and not dropna:
            i = int(np.flatnonzero(nan)[0])
            raise ValueError(
                f"{p.name}, row {i + 2}, column {name!r}: empty, NaN or infinite cell "
                f"({int(nan.sum())} such rows); fill it, or drop those rows with --dropna"
            )
        keep &= ~nan
    if not keep.any():
        raise ValueError(f"data: every row of {p.name} has an empty or NaN cell")
    X = np.stack([columns[c][keep] for c in out_names], axis=1)
    y = np.stack([columns[c][keep] for c in targets], axis=1) if targets else None
    lines = np.flatnonzero(keep) + 2
    dropped = int((~keep).sum())
    return Table(X, y, tuple(out_names), tuple(targets), lines, dropped, seen or None)
