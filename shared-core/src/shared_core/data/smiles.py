"""SMILES files: ``.smi`` (one SMILES a line, an optional name after white space) and CSV/TSV
with a named SMILES column and optional numeric target columns; ``.smi`` out.

Every SMILES is parsed by RDKit; one that does not parse is a malformed record (one ValueError
naming the file and line, or skipped and counted with ``skip_invalid=True``).
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from shared_core.atomic import atomic_write_text
from shared_core.data.read_result import ReadResult, nonempty_file
from shared_core.data.registry import require_extra
from shared_core.errors import InputError

_SMILES_SUFFIXES = (".smi", ".smiles", ".txt")
_TABLE_DELIMITERS = {".csv": ",", ".tsv": "\t"}


@dataclass(frozen=True)
class SmilesRecord:
    """One molecule of a SMILES file: the SMILES as written, its name (``""`` when none), the
    target values of the requested columns and its 1-based line in the file (0: not from a
    file), so a caller's own check of the molecule can name the line too."""

    smiles: str
    name: str = ""
    targets: dict[str, float] = field(default_factory=dict)
    line: int = 0


def _chem() -> Any:
    require_extra("shared-core", "chem", "rdkit", "reading SMILES files")
    from rdkit import Chem

    return Chem


def _quiet() -> Any:
    from rdkit import rdBase

    return rdBase.BlockLogs()


def read_smiles(
    path: str | os.PathLike[str],
    *,
    smiles_column: str = "smiles",
    target_columns: Sequence[str] = (),
    name_column: str | None = None,
    skip_invalid: bool = False,
) -> ReadResult[SmilesRecord]:
    """The molecules of a ``.smi``/``.smiles``/``.txt`` file or a ``.csv``/``.tsv`` table.

    ``.smi``: ``SMILES [name]`` a line; blank lines and ``#`` comments are ignored, and a
    first line whose first field is `smiles_column` (any case) is a header. CSV/TSV: the
    header must hold `smiles_column` and every one of `target_columns` (a missing column is a
    ValueError listing the header); `name_column` names each record. Targets must be finite
    numbers. Requires RDKit (the ``chem`` extra).
    """
    p = nonempty_file(path, "SMILES, one molecule a line")
    if isinstance(target_columns, str):
        raise TypeError(
            f"target_columns: expected a sequence of column names, got the string {target_columns!r}"
        )
    suffix = p.suffix.lower()
    if suffix not in _SMILES_SUFFIXES and suffix not in _TABLE_DELIMITERS:
        raise InputError(
            f"path: expected a {', '.join(_SMILES_SUFFIXES + tuple(_TABLE_DELIMITERS))} file, "
            f"got {p.name!r}"
        )
    if suffix in _SMILES_SUFFIXES and target_columns:
        raise InputError(
            f"target_columns: a {suffix} file has no columns; got {list(target_columns)} "
            "(use a .csv or .tsv with a header)"
        )
    chem = _chem()
    result: ReadResult[SmilesRecord] = ReadResult(p)
    rows = (
        _smi_rows(p, smiles_column)
        if suffix in _SMILES_SUFFIXES
        else _table_rows(p, _TABLE_DELIMITERS[suffix], smiles_column, target_columns, name_column)
    )
    with _quiet():  # a bad SMILES is reported once, by our error
        for line, smiles, name, raw_targets, problem in rows:
            try:
                if problem:
                    raise InputError(problem)
                record = _record(chem, smiles, name, raw_targets)
            except ValueError as e:
                result.reject(line, str(e), skip_invalid)
                continue
            result.records.append(replace(record, line=line))
    return result.finish("at least one valid SMILES")


# (line, SMILES, name, target cells, what is wrong with the row's layout or "")
_Row = tuple[int, str, str, dict[str, str], str]


def _smi_rows(p: Path, smiles_column: str) -> Iterable[_Row]:
    with open(p, encoding="utf-8") as f:
        for line, text in enumerate(f, start=1):
            parts = text.split(None, 1)
            if not parts or parts[0].startswith("#"):
                continue
            if line == 1 and parts[0].lower() == smiles_column.lower():
                continue
            yield line, parts[0], parts[1].strip() if len(parts) > 1 else "", {}, ""


def _table_rows(
    p: Path,
    delimiter: str,
    smiles_column: str,
    target_columns: Sequence[str],
    name_column: str | None,
) -> Iterable[_Row]:
    with open(p, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter=delimiter)
        header = next(reader, [])
        wanted = [smiles_column, *target_columns, *([name_column] if name_column else [])]
        missing = [c for c in wanted if c not in header]
        if missing:
            raise InputError(
                f"{p}, line 1: no column {missing[0]!r}; expected the columns {wanted}, "
                f"the header has {header}"
            )
        col = {c: header.index(c) for c in wanted}
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                problem = f"expected {len(header)} fields (the header's), got {len(row)}"
                yield line, "", "", {}, problem
                continue
            targets = {c: row[col[c]] for c in target_columns}
            name = row[col[name_column]] if name_column else ""
            yield line, row[col[smiles_column]].strip(), name, targets, ""


def _record(chem: Any, smiles: str, name: str, raw_targets: dict[str, str]) -> SmilesRecord:
    if not smiles:
        raise InputError("empty SMILES; expected a SMILES string")
    if chem.MolFromSmiles(smiles) is None:
        raise InputError(f"invalid SMILES {smiles!r}; expected a SMILES string RDKit parses")
    targets = {}
    for column, text in raw_targets.items():
        try:
            value = float(text)
        except ValueError:
            raise InputError(f"column {column!r}: expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise InputError(f"column {column!r}: expected a finite number, got {text!r}")
        targets[column] = value
    return SmilesRecord(smiles, name, targets)


def write_smiles(
    path: str | os.PathLike[str], smiles: Iterable[str], names: Iterable[str] | None = None
) -> Path:
    """Write a ``.smi`` file atomically: one ``SMILES[ name]`` a line.

    A SMILES or name holding white space or a line break, or `names` of another length, is a
    ValueError (the file would not read back as written).
    """
    smiles = list(smiles)
    labels = [""] * len(smiles) if names is None else [str(n) for n in names]
    if len(labels) != len(smiles):
        raise InputError(f"names: expected {len(smiles)} names (one per SMILES), got {len(labels)}")
    lines = []
    for i, (s, n) in enumerate(zip(smiles, labels, strict=True)):
        if not isinstance(s, str) or not s or len(s.split()) != 1:
            raise InputError(f"smiles[{i}]: expected one SMILES without white space, got {s!r}")
        if "\n" in n or "\r" in n:
            raise InputError(f"names[{i}]: expected a name on one line, got {n!r}")
        lines.append(f"{s} {n}".rstrip() + "\n")
    return atomic_write_text(path, "".join(lines))
