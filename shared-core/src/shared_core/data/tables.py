"""CSV and Parquet tables with named feature and target columns, read with pandas.

A missing column, a feature column that is not numeric and an empty (NaN) cell are each one
ValueError naming the column (and the row's line); ``dropna=True`` skips rows with an empty
cell instead and counts them, ``one_hot=True`` expands a text feature column into one 0/1
column per value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from shared_core.atomic import atomic_path
from shared_core.data.read_result import ReadResult, nonempty_file
from shared_core.data.registry import require_extra
from shared_core.errors import InputError

_TABLE_SUFFIXES = (".csv", ".tsv", ".parquet")


@dataclass
class Table(ReadResult[int]):
    """Features ``(n, f)`` and targets ``(n, t)`` (float64) of `path`'s kept rows.

    `feature_names` name the columns of `features` (``"colour=red"`` for a one-hot column);
    `records` are the kept rows' 1-based line numbers (CSV/TSV: the header is line 1) or
    1-based row numbers (Parquet); `skipped` lists ``(line, reason)`` of the rows `dropna`
    dropped.
    """

    features: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    targets: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    feature_names: list[str] = field(default_factory=list)
    target_names: list[str] = field(default_factory=list)


def _pandas() -> Any:
    require_extra("shared-core", "tables", ("pandas", "pyarrow"), "reading tables", in_root=False)
    import pandas as pd

    return pd


def read_frame(path: str | os.PathLike[str]) -> Any:
    """The whole ``.csv``/``.tsv``/``.parquet`` file as a pandas DataFrame (refusing an empty
    file, or one with a header and no row). Requires the ``tables`` extra."""
    p = nonempty_file(path, "a table with a header and rows")
    suffix = p.suffix.lower()
    if suffix not in _TABLE_SUFFIXES:
        raise InputError(f"path: expected a {', '.join(_TABLE_SUFFIXES)} file, got {p.name!r}")
    pd = _pandas()
    try:
        if suffix == ".parquet":
            frame = pd.read_parquet(p)
        else:
            frame = pd.read_csv(p, sep="\t" if suffix == ".tsv" else ",", skip_blank_lines=True)
    except (ValueError, OSError, pd.errors.ParserError) as e:
        raise InputError(f"path: pandas could not read {p} ({e})") from None
    if len(frame) == 0:
        raise InputError(f"path: {p} holds no row; expected a header and at least one row")
    return frame


def read_table(
    path: str | os.PathLike[str],
    features: Sequence[str],
    targets: Sequence[str] = (),
    *,
    dropna: bool = False,
    one_hot: bool = False,
) -> Table:
    """The named `features` and `targets` columns of a CSV/TSV/Parquet file as float arrays.

    A missing column is a ValueError naming it and the columns there are; a non-numeric
    feature column is one (naming the column and the first line that is not a number)
    unless ``one_hot=True``, which expands it into one 0/1 column per value (sorted);
    targets must be numeric. An empty cell is a ValueError naming its column and line, or
    with ``dropna=True`` its row is dropped and listed in `Table.skipped`.
    """
    for name, columns in (("features", features), ("targets", targets)):
        if isinstance(columns, str):
            raise TypeError(f"{name}: expected a sequence of column names, got {columns!r}")
    if not features:
        raise InputError("features: expected at least one column name, got none")
    p = Path(path)
    frame = read_frame(p)
    pd = _pandas()
    lines = _row_lines(p, len(frame))
    missing = [c for c in [*features, *targets] if c not in frame.columns]
    if missing:
        raise InputError(
            f"{p}: no column {missing[0]!r}; expected columns {[*features, *targets]}, "
            f"the file has {list(frame.columns)}"
        )
    wanted = list(dict.fromkeys([*features, *targets]))
    empty = frame[wanted].isna().to_numpy()
    skipped: list[tuple[int, str]] = []
    if empty.any():
        bad_rows = np.flatnonzero(empty.any(axis=1))
        if not dropna:
            first = int(bad_rows[0])
            column = wanted[int(np.flatnonzero(empty[first])[0])]
            raise InputError(
                f"{p}, {_unit(p)} {lines[first]}: column {column!r} is empty; expected a value "
                "(or pass dropna=True to drop such rows)"
            )
        for r in bad_rows:
            columns = [wanted[j] for j in np.flatnonzero(empty[r])]
            skipped.append((int(lines[r]), f"empty cell in column(s) {columns}"))
        keep = ~empty.any(axis=1)
        frame, lines = frame[keep], lines[keep]
        if len(frame) == 0:
            raise InputError(f"path: every row of {p} has an empty cell in {wanted}")
    feature_blocks, feature_names = [], []
    for column in features:
        series = frame[column]
        if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
            feature_blocks.append(series.to_numpy(dtype=np.float64)[:, None])
            feature_names.append(column)
        elif one_hot:
            values = sorted(series.astype(str).unique())
            codes = series.astype(str).to_numpy()
            feature_blocks.append(np.stack([codes == v for v in values], axis=1).astype(np.float64))
            feature_names += [f"{column}={v}" for v in values]
        else:
            raise InputError(_not_numeric(p, column, series, lines, "feature", "one_hot=True"))
    target_blocks = []
    for column in targets:
        series = frame[column]
        if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            raise InputError(_not_numeric(p, column, series, lines, "target", ""))
        target_blocks.append(series.to_numpy(dtype=np.float64)[:, None])
    return Table(
        p,
        unit=_unit(p),
        records=[int(n) for n in lines],
        skipped=skipped,
        features=np.concatenate(feature_blocks, axis=1),
        targets=np.concatenate(target_blocks, axis=1)
        if target_blocks
        else np.zeros((len(frame), 0)),
        feature_names=feature_names,
        target_names=list(targets),
    )


def _not_numeric(p: Path, column: str, series: Any, lines: np.ndarray, role: str, hint: str) -> str:
    def is_number(x: Any) -> bool:
        try:
            float(x)
        except (TypeError, ValueError):
            return False
        return not isinstance(x, bool)

    bad = [i for i, x in enumerate(series.tolist()) if not is_number(x)]
    first = (
        f"{_unit(p)} {lines[bad[0]]}: {series.iloc[bad[0]]!r}" if bad else f"dtype {series.dtype}"
    )
    also = f" (or pass {hint} to expand it into 0/1 columns)" if hint else ""
    return f"{p}: {role} column {column!r} is not numeric ({first}); expected numbers{also}"


def _unit(p: Path) -> str:
    return "row" if p.suffix.lower() == ".parquet" else "line"


def _csv_lines(p: Path) -> np.ndarray:
    """1-based line numbers of a CSV's data rows (blank lines skipped, as pandas does)."""
    with open(p, encoding="utf-8", errors="replace") as f:
        numbers = [n for n, text in enumerate(f, start=1) if text.strip()]
    return np.asarray(numbers[1:], dtype=np.int64)


def _row_lines(p: Path, n_rows: int) -> np.ndarray:
    """Each row's line (CSV; a quoted cell over several lines falls back to row + 1) or its
    1-based row number (Parquet)."""
    if p.suffix.lower() == ".parquet":
        return np.arange(1, n_rows + 1)
    lines = _csv_lines(p)
    return lines if len(lines) == n_rows else np.arange(2, n_rows + 2)


def write_table(path: str | os.PathLike[str], columns: Mapping[str, Any]) -> Path:
    """Write `columns` (name -> 1-D values of one length, or a DataFrame) atomically as
    ``.csv``/``.tsv`` (no index) or ``.parquet``. Requires the ``tables`` extra."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in _TABLE_SUFFIXES:
        raise InputError(f"path: expected a {', '.join(_TABLE_SUFFIXES)} file name, got {p.name!r}")
    pd = _pandas()
    frame = columns if isinstance(columns, pd.DataFrame) else pd.DataFrame(dict(columns))
    with atomic_path(p) as tmp:
        if suffix == ".parquet":
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, sep="\t" if suffix == ".tsv" else ",", index=False)
    return p
