"""QM9 from the ``qm9pack`` wheel as padded arrays, parsed once and cached.

The qm9pack CSVs hold 130,831 molecules in three parts in GDB index order (small
molecules first), so subsets are drawn uniformly over all parts with a seeded choice.
Coordinates are exactly as published (not centred). Properties keep the original units
(Hartree for energies, Debye for μ).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from orient_bias.frames import Poses
from shared_core.data import cached_arrays, iter_qm9pack_csv, package_dir, require_extra
from shared_core.data.molecules import QM9PACK_TARGETS

__all__ = ["QM9_TARGETS", "QM9Subset", "load_qm9", "parse_qm9pack_csv", "qm9_arrays"]

QM9_TARGETS = tuple(QM9PACK_TARGETS)
"""The 15 QM9 property names in the order of ``QM9Subset.targets`` columns."""

QM9_MAX_ATOMS = 29


def parse_qm9pack_csv(
    path: str | Path, n_max: int = QM9_MAX_ATOMS, limit: int | None = None
) -> tuple[dict[str, np.ndarray], list[tuple[str, str]]]:
    """Parse one qm9pack CSV into padded arrays; rows that fail are returned, not raised.

    Returns ``(arrays, skipped)``: arrays ``positions (M, n_max, 3)``, ``numbers (M, n_max)``,
    ``index (M,)``, ``names (M,)``, ``smiles (M,)``, ``targets (M, 15)``; skipped is a list of
    ``(where, reason)``. `limit` stops after that many data rows. The rows are read by
    `shared_core.data.iter_qm9pack_csv`.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: {p} does not exist or is not a file")
    if isinstance(n_max, bool) or not isinstance(n_max, int) or n_max < 1:
        raise ValueError(f"n_max: expected a positive int, got {n_max!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit: expected a positive int or None, got {limit!r}")
    with open(p, newline="") as f:
        header = next(csv.reader(f), [])
    missing = [c for c in QM9PACK_TARGETS.values() if c not in header]
    if missing:
        raise ValueError(f"path: {p} is not a qm9pack CSV; missing columns {missing}")
    skipped: list[tuple[str, str]] = []  # malformed rows, as the reader reports them
    too_big: list[tuple[str, str]] = []
    mols = []
    for i, m in enumerate(iter_qm9pack_csv(p, skipped=skipped)):
        if len(m) > n_max:
            too_big.append((f"{p}:{m.name}", f"{len(m)} atoms exceeds n_max={n_max}"))
        else:
            mols.append(m)
        if limit is not None and i + 1 + len(skipped) >= limit:
            break
    skipped += too_big
    m_count = len(mols)
    pos = np.zeros((m_count, n_max, 3))
    num = np.zeros((m_count, n_max), dtype=np.int8)
    for b, m in enumerate(mols):
        pos[b, : len(m)], num[b, : len(m)] = m.positions, m.numbers
    arrays: dict[str, np.ndarray] = {
        "positions": pos,
        "numbers": num,
        "index": np.array(
            [int(m.properties.get("index", b + 1)) for b, m in enumerate(mols)], dtype=np.int64
        ),
        "names": np.array([m.name for m in mols], dtype=str),
        "smiles": np.array([m.properties["smiles"] for m in mols], dtype=str),
        "targets": np.array(
            [[m.properties[k] for k in QM9PACK_TARGETS] for m in mols], dtype=np.float64
        ).reshape(-1, len(QM9PACK_TARGETS)),
    }
    return arrays, skipped


def qm9_parts() -> list[Path]:
    """The three qm9pack CSV parts; FileNotFoundError with the install command when absent."""
    require_extra("orient-bias", "qm9", "qm9pack", "QM9 (the qm9pack wheel)")
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


def load_qm9(n: int | None = None, seed: int = 0, *, rows_per_part: int | None = None) -> QM9Subset:
    """`n` QM9 molecules drawn with `sample_rows` (deterministic in `seed`), or all of them.

    By default all 130,831 molecules are parsed once and cached (`qm9_arrays`);
    `rows_per_part` instead reads only the first rows of each of the three qm9pack parts
    (no cache; seconds), e.g. for the ``micro`` scale.
    """
    if rows_per_part is None:
        arrays = qm9_arrays()
    else:
        if (
            isinstance(rows_per_part, bool)
            or not isinstance(rows_per_part, int)
            or rows_per_part < 1
        ):
            raise ValueError(
                f"rows_per_part: expected a positive int or None, got {rows_per_part!r}"
            )
        chunks = [parse_qm9pack_csv(part, limit=rows_per_part)[0] for part in qm9_parts()]
        arrays = {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}
    return QM9Subset(arrays, sample_rows(len(arrays["index"]), n, seed))
