"""QM9 from the ``qm9pack`` wheel as padded arrays, parsed once and cached.

The qm9pack CSVs hold 130,831 molecules in three parts in GDB index order (small
molecules first), so subsets are drawn uniformly over all parts with a seeded choice.
Coordinates are exactly as published (not centred). Properties keep the original units
(Hartree for energies, Debye for μ).
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import numpy as np

from orient_bias.frames import Poses
from shared_core.data import atomic_number, cached_arrays, package_dir
from shared_core.data.molecules import QM9PACK_TARGETS

__all__ = ["QM9_TARGETS", "QM9Subset", "load_qm9", "parse_qm9pack_csv", "qm9_arrays"]

QM9_TARGETS = tuple(QM9PACK_TARGETS)
"""The 15 QM9 property names in the order of ``QM9Subset.targets`` columns."""

QM9_MAX_ATOMS = 29
_ELEMENT = re.compile(r"[A-Z][a-z]?")


def _coords(field: str, where: str) -> np.ndarray:
    try:
        return np.array(
            field.replace("[", " ").replace("]", " ").replace(",", " ").split(), dtype=np.float64
        ).reshape(-1, 3)
    except ValueError:
        raise ValueError(f"{where}: unparsable XYZ_Ang field") from None


def parse_qm9pack_csv(
    path: str | Path, n_max: int = QM9_MAX_ATOMS, limit: int | None = None
) -> tuple[dict[str, np.ndarray], list[tuple[str, str]]]:
    """Parse one qm9pack CSV into padded arrays; rows that fail are returned, not raised.

    Returns ``(arrays, skipped)``: arrays ``positions (M, n_max, 3)``, ``numbers (M, n_max)``,
    ``index (M,)``, ``names (M,)``, ``smiles (M,)``, ``targets (M, 15)``; skipped is a list of
    ``(where, reason)``. `limit` stops after that many data rows. Same values as `shared_core.data.iter_qm9pack_csv`, without
    ``ast.literal_eval`` (about 20x faster).
    """
    p = Path(path)
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    pos: list[np.ndarray] = []
    num: list[np.ndarray] = []
    idx: list[int] = []
    names: list[str] = []
    smiles: list[str] = []
    targets: list[list[float]] = []
    skipped: list[tuple[str, str]] = []
    with open(p, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None) or []
        need = ["XYZ_file", "SMILES", "Elements", "XYZ_Ang", *QM9PACK_TARGETS.values()]
        missing = [c for c in need if c not in header]
        if missing:
            raise ValueError(f"path: {p} is not a qm9pack CSV; missing columns {missing}")
        col = {c: header.index(c) for c in need}
        has_index = "Index" in header
        for row_no, row in enumerate(reader, start=2):
            if limit is not None and row_no - 1 > limit:
                break
            where = f"{p}:{row_no}"
            try:
                if len(row) != len(header):
                    raise ValueError(f"{where}: expected {len(header)} fields, got {len(row)}")
                z = [atomic_number(s) for s in _ELEMENT.findall(row[col["Elements"]])]
                x = _coords(row[col["XYZ_Ang"]], where)
                if len(z) != len(x) or not z:
                    raise ValueError(f"{where}: {len(z)} elements but {len(x)} coordinates")
                if len(z) > n_max:
                    raise ValueError(f"{where}: {len(z)} atoms exceeds n_max={n_max}")
                if not np.all(np.isfinite(x)):
                    raise ValueError(f"{where}: non-finite coordinates")
                t = [float(row[col[c]]) for c in QM9PACK_TARGETS.values()]
            except ValueError as e:
                skipped.append((where, str(e)))
                continue
            xp = np.zeros((n_max, 3))
            zp = np.zeros(n_max, dtype=np.int8)
            xp[: len(x)], zp[: len(z)] = x, z
            pos.append(xp)
            num.append(zp)
            names.append(Path(row[col["XYZ_file"]]).stem)
            idx.append(int(row[header.index("Index")]) if has_index else len(idx) + 1)
            smiles.append(row[col["SMILES"]])
            targets.append(t)
    arrays: dict[str, np.ndarray] = {
        "positions": np.array(pos).reshape(-1, n_max, 3),
        "numbers": np.array(num, dtype=np.int8).reshape(-1, n_max),
        "index": np.array(idx, dtype=np.int64),
        "names": np.array(names, dtype=str),
        "smiles": np.array(smiles, dtype=str),
        "targets": np.array(targets, dtype=np.float64).reshape(-1, len(QM9PACK_TARGETS)),
    }
    return arrays, skipped


def qm9_parts() -> list[Path]:
    root = package_dir("qm9pack") / "data"
    parts = sorted(root.glob("qm9_part*.csv"))
    if not parts:
        raise FileNotFoundError(f"no qm9_part*.csv under {root}")
    return parts


def qm9_arrays() -> dict[str, np.ndarray]:
    """All 130,831 QM9 molecules as padded arrays, cached in ``$SHARED_CORE_CACHE``."""

    def build() -> dict[str, np.ndarray]:
        chunks = []
        for part in qm9_parts():
            arrays, skipped = parse_qm9pack_csv(part)
            if skipped:
                raise ValueError(f"{part}: {len(skipped)} malformed rows, first: {skipped[0]}")
            chunks.append(arrays)
        return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}

    return cached_arrays("orient-bias-qm9pack-1.0.3", build)


class QM9Subset:
    """A seeded subset of QM9: `poses`, `targets` ``(n, 15)`` (columns `QM9_TARGETS`), `smiles`, `index`."""

    def __init__(self, arrays: dict[str, np.ndarray], rows: np.ndarray) -> None:
        self.rows = rows
        self.poses = Poses(
            arrays["positions"][rows], arrays["numbers"][rows], arrays["names"][rows]
        )
        self.targets = arrays["targets"][rows]
        self.smiles = arrays["smiles"][rows]
        self.index = arrays["index"][rows]

    def __len__(self) -> int:
        return len(self.rows)

    def target(self, name: str) -> np.ndarray:
        if name not in QM9_TARGETS:
            raise ValueError(f"target: expected one of {QM9_TARGETS}, got {name!r}")
        return self.targets[:, QM9_TARGETS.index(name)]


def sample_rows(total: int, n: int | None, seed: int = 0) -> np.ndarray:
    """Sorted row numbers of `n` of `total` rows, uniform without replacement (all rows if `n` is None).

    The qm9pack parts are in GDB order (small molecules first), so a uniform draw over the
    concatenated rows spreads a subset over all three parts; a prefix would not.
    """
    if n is None or (isinstance(n, int) and n >= total):
        return np.arange(total)
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"n: expected a positive int or None, got {n!r}")
    return np.sort(np.random.default_rng(seed).choice(total, size=n, replace=False))


def load_qm9(n: int | None = None, seed: int = 0) -> QM9Subset:
    """`n` QM9 molecules drawn with `sample_rows` (deterministic in `seed`), or all of them."""
    arrays = qm9_arrays()
    return QM9Subset(arrays, sample_rows(len(arrays["index"]), n, seed))
