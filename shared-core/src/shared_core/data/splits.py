"""Deterministic seeded splits and mini-batching for numpy arrays and torch tensors."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np


def _check_fractions(fractions: Sequence[float]) -> np.ndarray:
    f = np.asarray(fractions, dtype=float)
    if f.ndim != 1 or len(f) < 2 or np.any(f <= 0) or not np.isclose(f.sum(), 1.0):
        raise ValueError(
            f"fractions: expected two or more positive fractions summing to 1, got {list(fractions)}"
        )
    return f


def _cut(n: int, f: np.ndarray) -> list[int]:
    bounds = np.floor(np.cumsum(f) * n + 1e-9).astype(int)
    bounds[-1] = n
    return [int(b) for b in bounds[:-1]]


def split_indices(
    n: int, fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0
) -> tuple[np.ndarray, ...]:
    """Shuffle ``range(n)`` with `seed` and cut it into parts of the given fractions."""
    if not isinstance(n, (int, np.integer)) or n < len(fractions):
        raise ValueError(f"n: expected an int >= the number of parts ({len(fractions)}), got {n!r}")
    f = _check_fractions(fractions)
    perm = np.random.default_rng(seed).permutation(int(n))
    return tuple(np.sort(part) for part in np.split(perm, _cut(int(n), f)))


def group_split(
    groups: Sequence[Any] | np.ndarray, fractions: Sequence[float] = (0.8, 0.2), seed: int = 0
) -> tuple[np.ndarray, ...]:
    """Split row indices so that all rows of one group land in the same part.

    Use it to keep, e.g., the original and the rotated copy of a molecule together.
    """
    g = np.asarray(groups)
    if g.ndim != 1 or len(g) == 0:
        raise ValueError(
            f"groups: expected a non-empty 1-D sequence of labels, got shape {g.shape}"
        )
    uniq, inverse = np.unique(g, return_inverse=True)
    parts = split_indices(len(uniq), fractions, seed)
    return tuple(np.flatnonzero(np.isin(inverse, p)) for p in parts)


def batches(
    *arrays: Any,
    batch_size: int,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
) -> Iterator[tuple[Any, ...]]:
    """Yield aligned mini-batches of equal-length arrays (numpy arrays or torch tensors).

    The order is a seeded permutation when `shuffle`; the same seed gives the same batches.
    """
    if not arrays:
        raise ValueError("arrays: expected at least one array")
    if not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size: expected a positive int, got {batch_size!r}")
    n = len(arrays[0])
    for i, a in enumerate(arrays):
        if len(a) != n:
            raise ValueError(f"arrays: array {i} has length {len(a)}, expected {n} like array 0")
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    stop = n - n % batch_size if drop_last else n
    for start in range(0, stop, batch_size):
        idx = order[start : start + batch_size]
        yield tuple(_take(a, idx) for a in arrays)


def _take(a: Any, idx: np.ndarray) -> Any:
    if isinstance(a, np.ndarray):
        return a[idx]
    if type(a).__module__.startswith("torch"):
        import torch

        return a[torch.as_tensor(idx, device=a.device)]
    return [a[int(i)] for i in idx]


def murcko_scaffolds(smiles: Sequence[str]) -> list[str]:
    """The Bemis–Murcko scaffold (canonical SMILES, RDKit ``MurckoScaffold``) of each molecule.

    An acyclic molecule has the empty scaffold ``""``. Needs RDKit (extra ``chem``).
    """
    from shared_core.data.registry import require_extra

    require_extra("shared-core", "chem", "rdkit", "murcko_scaffolds (RDKit)")
    from rdkit import Chem
    from rdkit.Chem.Scaffolds import MurckoScaffold

    out = []
    for i, s in enumerate(smiles):
        mol = Chem.MolFromSmiles(s) if isinstance(s, str) else None
        if mol is None:
            raise ValueError(f"smiles: entry {i} is not a valid SMILES string: {s!r}")
        scaffold = MurckoScaffold.MurckoScaffoldSmiles(mol=mol, includeChirality=False)  # type: ignore[no-untyped-call]
        out.append(scaffold)
    return out


def scaffold_split(
    smiles: Sequence[str], fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int | None = None
) -> tuple[np.ndarray, ...]:
    """Split row indices so that molecules sharing a Bemis–Murcko scaffold land in one part.

    ``seed=None`` is the deterministic split of DeepChem/MoleculeNet: scaffold sets sorted by
    size (largest first, ties by first appearance) fill the parts in order, so the rarest
    scaffolds end in the last part. An int `seed` instead shuffles the scaffold sets
    (`group_split` on the scaffolds), so part sizes hold only approximately.
    """
    if isinstance(smiles, str) or len(smiles) == 0:
        raise ValueError("smiles: expected a non-empty sequence of SMILES strings")
    scaffolds = murcko_scaffolds(smiles)
    if seed is not None:
        return group_split(scaffolds, fractions, seed)
    f = _check_fractions(fractions)
    sets: dict[str, list[int]] = {}
    for i, s in enumerate(scaffolds):
        sets.setdefault(s, []).append(i)
    ordered = sorted(sets.values(), key=lambda rows: (-len(rows), rows[0]))
    capacity = np.cumsum(f) * len(scaffolds)
    parts: list[list[int]] = [[] for _ in f]
    k, filled = 0, 0
    for rows in ordered:
        while k < len(f) - 1 and filled + len(rows) > capacity[k] + 1e-9:
            k += 1
        parts[k].extend(rows)
        filled += len(rows)
    return tuple(np.asarray(sorted(p), dtype=np.int64) for p in parts)
