"""Rows of training runs from CSV files: any layout (`read_runs_csv`) and Epoch AI's extraction
of Chinchilla's Figure 4 (`read_epoch_chinchilla`).

The file is read by shared-core's table reader (`shared_core.data.tables.read_frame`: CSV, TSV
or Parquet, pandas); this module turns its columns into `ScalingData` with the checks the laws
need (numbers, > 0, a quality in (0, 1]), each error naming the file's row and the column.

Epoch AI (Besiroglu et al. 2024, "Chinchilla scaling: a replication attempt") read 245 runs
off Hoffmann et al.'s Figure 4 (columns ``Model Size``, ``Training FLOP``, ``loss``). Their
notebook drops the 5 runs with the highest loss before fitting (`EPOCH_DROPPED_RUNS`) and fits
the remaining 240, giving E = 1.82, A = 482, B = 2085, alpha = 0.348, beta = 0.366. Fitting all
245 rows instead moves the fit to beta = 0.453 and E = 1.89, so the filter is applied by default.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from quality_scaling.laws import ScalingData
from shared_core.data.tables import read_frame

__all__ = ["EPOCH_COLUMNS", "EPOCH_DROPPED_RUNS", "read_epoch_chinchilla", "read_runs_csv"]

EPOCH_DROPPED_RUNS = 5
"""Epoch AI's filter: the number of highest-loss runs dropped before the fit."""
EPOCH_COLUMNS = ("Model Size", "Training FLOP", "loss")
"""N (parameters), C (training FLOPs, C = 6 N D) and the final loss (nats)."""


def _read(path: str | PathLike[str]) -> tuple[Path, Any]:
    """`path` and its rows as a pandas DataFrame, read by `shared_core.data.tables.read_frame`
    (CSV, TSV or Parquet; a missing, empty or header-only file is refused there)."""
    if not isinstance(path, (str, PathLike)):
        raise TypeError(f"path: expected a path to a CSV file, got {type(path).__name__}")
    p = Path(path)
    return p, read_frame(p)


def _row(p: Path, i: int) -> int:
    """The row number an error names for the frame's `i`-th row: the file's line (a CSV's
    header is line 1), or the 1-based row of a Parquet file."""
    return i + 1 if p.suffix.lower() == ".parquet" else i + 2


def _column(p: Path, frame: Any, name: str) -> np.ndarray:
    """Column `name` as floats (an empty cell is NaN); a text cell is an error naming its row."""
    if name not in frame.columns:
        raise ValueError(
            f"column {name!r}: not in {p.name}; its columns are {sorted(map(str, frame.columns))}"
        )
    cells = frame[name].tolist()
    out = np.empty(len(cells))
    for i, cell in enumerate(cells):
        try:
            out[i] = float(cell)
        except (TypeError, ValueError):
            raise ValueError(
                f"{p.name}, row {_row(p, i)}, column {name!r}: expected a number, got {cell!r}"
            ) from None
    return out


def _check_cells(p: Path, columns: dict[str, np.ndarray], dropna: bool) -> np.ndarray:
    """Rows to keep: every cell finite (else an error naming the row, or dropped with
    `dropna`) and positive (else an error naming the row and the column)."""
    keep = np.ones(len(next(iter(columns.values()))), dtype=bool)
    for name, values in columns.items():
        missing = ~np.isfinite(values)
        if missing.any() and not dropna:
            i = int(np.flatnonzero(missing)[0])
            raise ValueError(
                f"{p.name}, row {_row(p, i)}, column {name!r}: empty, NaN or infinite cell "
                f"({int(missing.sum())} such rows); fill it, or drop those rows (dropna=True, "
                "--dropna)"
            )
        keep &= ~missing
    for name, values in columns.items():
        bad = keep & ~(values > 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{p.name}, row {_row(p, i)}, column {name!r}: expected a value > 0 (the laws take "
                f"logs of N, D, Q and the loss), got {values[i]:g}"
            )
    if not keep.any():
        raise ValueError(f"{p.name}: every row has an empty or NaN cell; nothing left to fit")
    return keep


def read_runs_csv(
    path: str | PathLike[str],
    n_col: str = "N",
    d_col: str = "D",
    loss_col: str = "loss",
    q_col: str | None = None,
    dropna: bool = False,
) -> ScalingData:
    """One `ScalingData` row per row of a CSV, TSV or Parquet file: N, D, loss (and Q, if `q_col`
    is given) by column name.

    Row numbers in errors are the file's line numbers (the header is line 1). A row with an
    empty or NaN cell in one of these columns is an error unless `dropna` drops it.
    """
    p, frame = _read(path)
    names = [n_col, d_col, loss_col] + ([q_col] if q_col is not None else [])
    columns = {name: _column(p, frame, name) for name in names}
    keep = _check_cells(p, columns, dropna)
    if q_col is not None and np.any(columns[q_col][keep] > 1):
        i = int(np.flatnonzero(keep & (columns[q_col] > 1))[0])
        raise ValueError(
            f"{p.name}, row {_row(p, i)}, column {q_col!r}: expected a quality in (0, 1] (1 = clean "
            f"data), got {columns[q_col][i]:g}"
        )
    N, D, loss = (columns[c][keep] for c in (n_col, d_col, loss_col))
    q = columns[q_col][keep] if q_col is not None else None
    return ScalingData(N, D, loss, q)


def read_epoch_chinchilla(
    path: str | PathLike[str], drop_highest_loss: int = EPOCH_DROPPED_RUNS
) -> ScalingData:
    """Epoch AI's Chinchilla Fig. 4 CSV -> `ScalingData` with ``D = C / (6 N)``.

    `drop_highest_loss` runs with the highest loss are removed first, as Epoch AI's notebook
    does (5 of 245, leaving 240): with them, the fit is pulled to beta 0.45, E 1.89. Pass 0 to
    keep every row.
    """
    if (
        not isinstance(drop_highest_loss, int)
        or isinstance(drop_highest_loss, bool)
        or drop_highest_loss < 0
    ):
        raise ValueError(
            f"drop_highest_loss: expected a non-negative int, got {drop_highest_loss!r}"
        )
    p, frame = _read(path)
    N, C, L = (_column(p, frame, c) for c in EPOCH_COLUMNS)
    if drop_highest_loss >= len(L):
        raise ValueError(
            f"drop_highest_loss: expected fewer than the {len(L)} rows of {p.name}, "
            f"got {drop_highest_loss}"
        )
    if not np.all(np.isfinite(L)):
        raise ValueError(f"loss: expected finite values in {p.name}, got NaN or inf")
    keep = np.sort(np.argsort(L, kind="stable")[: len(L) - drop_highest_loss])
    with np.errstate(divide="ignore", invalid="ignore"):
        D = C / (6.0 * N)
    bad = keep[~np.isfinite(D[keep])]
    if bad.size:
        raise ValueError(
            f"{p.name}, row {_row(p, int(bad[0]))}: 'Training FLOP' / (6 'Model Size') is not finite"
        )
    return ScalingData(N[keep], D[keep], L[keep])
