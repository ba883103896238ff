"""Molecular graphs as flat token rows, the layout `masked_diffusion` works on.

A graph with at most ``N = max_atoms`` heavy atoms is one row of ``L = N + N (N - 1) / 2``
tokens: first the N atom types (`ATOM_TYPES`: C, N, O, F as 0..3), then the bond type of every
pair ``i < j`` in row-major upper-triangular order (`BOND_TYPES`: none, single, double,
triple as 0..3). Both vocabularies have four symbols, so one row is a plain sequence over
``VOCAB_SIZE = 4`` and the mask id is 4 (``masked_diffusion``'s convention: ``vocab_size``).
Positions of atoms ``>= n_atoms`` (and their pairs) are padding: they hold 0, are never
masked and never scored.

Molecules come from QM9 (``shared_core.data.load("qm9-smiles")``), kekulised, hydrogens
implicit; the few charged ones (about 0.2 %) are dropped because the vocabulary has no charge.
`decode` rebuilds a `shared_core.data.MolGraph` whose hydrogen counts fill each atom's default
valence (C 4, N 3, O 2, F 1) and NOTHING else: an over-bonded atom keeps its valence, and
RDKit's sanitisation (`shared_core.mol_metrics.validity`) rejects it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from shared_core.data import MolGraph

if TYPE_CHECKING:
    import torch

ATOM_TYPES = ("C", "N", "O", "F")
ATOMIC_NUMBERS = (6, 7, 8, 9)
DEFAULT_VALENCE = (4, 3, 2, 1)
BOND_TYPES = ("none", "single", "double", "triple")  # codes = shared_core BOND_TYPES[:4]
VOCAB_SIZE = 4
MASK_ID = VOCAB_SIZE
QM9_MAX_ATOMS = 9


def check_max_atoms(max_atoms: object) -> int:
    """Raise unless `max_atoms` is an int >= 1."""
    if isinstance(max_atoms, bool) or not isinstance(max_atoms, int) or max_atoms < 1:
        raise ValueError(f"max_atoms: expected an int >= 1, got {max_atoms!r}")
    return max_atoms


def seq_len(max_atoms: int) -> int:
    """Row length ``L = N + N (N - 1) / 2`` of graphs with at most `max_atoms` atoms."""
    n = check_max_atoms(max_atoms)
    return n + n * (n - 1) // 2


def pair_index(max_atoms: int) -> tuple[np.ndarray, np.ndarray]:
    """The atoms ``(i, j)``, ``i < j``, of bond positions ``N .. L-1`` (two int64 arrays)."""
    i, j = np.triu_indices(check_max_atoms(max_atoms), k=1)
    return i.astype(np.int64), j.astype(np.int64)


def valid_positions(n_atoms: torch.Tensor, max_atoms: int) -> torch.Tensor:
    """(batch, L) bool: the atom and bond positions that exist for graphs of `n_atoms` atoms."""
    import torch

    i, j = (torch.as_tensor(a, device=n_atoms.device) for a in pair_index(max_atoms))
    n = n_atoms.long()[:, None]
    atoms = torch.arange(max_atoms, device=n_atoms.device)[None] < n
    bonds = (j[None] < n) & (i[None] < n)
    return torch.cat([atoms, bonds], dim=1)


def check_graph_batch(
    x: torch.Tensor, n_atoms: torch.Tensor, max_atoms: int, name: str = "x0"
) -> None:
    """Raise unless `x` (batch, L) and `n_atoms` (batch,) describe padded graph rows."""
    import torch

    if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[1] != seq_len(max_atoms):
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(
            f"{name}: expected a (batch, {seq_len(max_atoms)}) token tensor for max_atoms="
            f"{max_atoms}, got {shape}"
        )
    if x.shape[0] == 0:
        raise ValueError(f"{name}: expected at least one graph row, got an empty batch")
    if torch.is_floating_point(x) or x.is_complex() or x.dtype == torch.bool:
        raise TypeError(f"{name}: expected integer tokens, got dtype {x.dtype}")
    if int(x.min()) < 0 or int(x.max()) >= VOCAB_SIZE:
        raise ValueError(
            f"{name}: expected clean tokens in [0, {VOCAB_SIZE}), got range "
            f"[{int(x.min())}, {int(x.max())}]"
        )
    if not isinstance(n_atoms, torch.Tensor) or n_atoms.shape != (x.shape[0],):
        shape = (
            tuple(n_atoms.shape) if isinstance(n_atoms, torch.Tensor) else type(n_atoms).__name__
        )
        raise ValueError(f"n_atoms: expected shape ({x.shape[0]},), got {shape}")
    if torch.is_floating_point(n_atoms) or int(n_atoms.min()) < 1 or int(n_atoms.max()) > max_atoms:
        raise ValueError(
            f"n_atoms: expected integers in [1, {max_atoms}], got range "
            f"[{n_atoms.min().item()}, {n_atoms.max().item()}]"
        )


def encode(graphs: Sequence[MolGraph], max_atoms: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``(len(graphs), L)`` int64 and atom counts ``(len(graphs),)`` of kekulised graphs.

    Raises ValueError for a graph with more than `max_atoms` atoms, an element outside C/N/O/F,
    a formal charge or an aromatic bond (call ``mol_graph(..., kekulize=True)``).
    """
    n = check_max_atoms(max_atoms)
    pos = {(int(a), int(b)): n + k for k, (a, b) in enumerate(zip(*pair_index(n), strict=True))}
    rows = np.zeros((len(graphs), seq_len(n)), dtype=np.int64)
    counts = np.zeros(len(graphs), dtype=np.int64)
    for r, g in enumerate(graphs):
        if not isinstance(g, MolGraph):
            raise TypeError(f"graphs: entry {r} is a {type(g).__name__}, expected a MolGraph")
        if g.num_atoms > n:
            raise ValueError(f"graphs: entry {r} has {g.num_atoms} atoms > max_atoms={n}")
        for k, (z, charge) in enumerate(g.atoms[:, :2].tolist()):
            if z not in ATOMIC_NUMBERS or charge != 0:
                raise ValueError(
                    f"graphs: entry {r} atom {k} is Z={z} with charge {charge}; expected an "
                    f"uncharged atom among {ATOM_TYPES}"
                )
            rows[r, k] = ATOMIC_NUMBERS.index(z)
        for (a, b), t in zip(
            g.edge_index[:, 0::2].T.tolist(), g.bond_types[0::2].tolist(), strict=True
        ):
            if t >= len(BOND_TYPES):
                raise ValueError(f"graphs: entry {r} has an aromatic bond; kekulise it first")
            rows[r, pos[(min(a, b), max(a, b))]] = t
        counts[r] = g.num_atoms
    return rows, counts


def decode(
    rows: np.ndarray | torch.Tensor, n_atoms: np.ndarray | torch.Tensor, max_atoms: int
) -> list[MolGraph]:
    """`MolGraph` of each row: the inverse of `encode` (hydrogens fill default valences).

    No valence correction: an atom whose bonds exceed its default valence gets 0 hydrogens and
    stays over-bonded, so RDKit sanitisation rejects the molecule.
    """
    rows = np.asarray(rows.cpu() if hasattr(rows, "cpu") else rows, dtype=np.int64)
    counts = np.asarray(n_atoms.cpu() if hasattr(n_atoms, "cpu") else n_atoms, dtype=np.int64)
    n = check_max_atoms(max_atoms)
    if rows.ndim != 2 or rows.shape[1] != seq_len(n) or counts.shape != (rows.shape[0],):
        raise ValueError(
            f"rows, n_atoms: expected shapes (b, {seq_len(n)}) and (b,), got {rows.shape} and "
            f"{counts.shape}"
        )
    if counts.size and (counts.min() < 1 or counts.max() > n):
        raise ValueError(
            f"n_atoms: expected atom counts in [1, max_atoms={n}], got {counts.min()}..{counts.max()}"
        )
    if rows.size and (rows.min() < 0 or rows.max() >= VOCAB_SIZE):
        raise ValueError(
            f"rows: expected tokens in [0, {VOCAB_SIZE}) (no mask left), got {rows.min()}..{rows.max()}"
        )
    pi, pj = pair_index(n)
    out = []
    for row, m in zip(rows, counts.tolist(), strict=True):
        types = row[:m]
        bonds = row[n:]
        keep = (bonds > 0) & (pj < m)
        a, b, t = pi[keep], pj[keep], bonds[keep]
        order = np.zeros(m, dtype=np.int64)
        np.add.at(order, a, t)
        np.add.at(order, b, t)
        hs = np.maximum(0, np.asarray(DEFAULT_VALENCE)[types] - order)
        atoms = np.zeros((m, 5), dtype=np.int64)
        atoms[:, 0] = np.asarray(ATOMIC_NUMBERS)[types]
        atoms[:, 4] = hs
        edge_index = np.stack([np.stack([a, b], 1), np.stack([b, a], 1)], 1).reshape(-1, 2).T
        out.append(MolGraph(atoms, edge_index.reshape(2, -1), np.repeat(t, 2), kekulized=True))
    return out


@dataclass(frozen=True)
class GraphData:
    """Encoded molecules: `rows` (n, L) int64, `n_atoms` (n,), their `smiles`, `max_atoms`."""

    rows: np.ndarray
    n_atoms: np.ndarray
    smiles: tuple[str, ...]
    max_atoms: int

    def __len__(self) -> int:
        return len(self.smiles)

    def atom_count_probs(self) -> np.ndarray:
        """Empirical distribution of the atom count, (max_atoms + 1,) (index = count)."""
        return np.bincount(self.n_atoms, minlength=self.max_atoms + 1) / len(self.n_atoms)


def require_qm9() -> None:
    """One-line error unless qm9pack (the ``data`` extra) is installed."""
    from shared_core.data import require_extra

    require_extra("meld-diffusion", "data", "qm9pack", "QM9", no_deps="qm9pack==1.0.3")


def qm9_graphs(
    limit: int | None = None,
    seed: int = 0,
    max_atoms: int = QM9_MAX_ATOMS,
    pool: int | None = None,
) -> GraphData:
    """QM9 molecules as `GraphData`: a seeded random subset of `limit` (all when None).

    The subset is drawn from the first `pool` molecules of QM9 (all 130,831 when None; QM9 is
    ordered by size, so a small pool holds small molecules: for quick tests only). Charged
    molecules are skipped after drawing, so slightly fewer than `limit` can come back.
    """
    from shared_core.data import load, mol_graph

    require_qm9()
    if pool is not None and (isinstance(pool, bool) or not isinstance(pool, int) or pool < 1):
        raise ValueError(f"pool: expected a positive int or None, got {pool!r}")
    smiles, _ = load("qm9-smiles", limit=pool)
    idx = np.arange(len(smiles))
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit: expected a positive int or None, got {limit!r}")
        idx = np.sort(np.random.default_rng(seed).permutation(len(smiles))[:limit])
    graphs, kept = [], []
    for k in idx.tolist():
        g = mol_graph(smiles[k], kekulize=True)
        if g.num_atoms > max_atoms or (g.atoms[:, 1] != 0).any():
            continue
        graphs.append(g)
        kept.append(smiles[k])
    rows, counts = encode(graphs, max_atoms)
    return GraphData(rows, counts, tuple(kept), max_atoms)


def relayout(rows: np.ndarray, from_atoms: int, to_atoms: int) -> np.ndarray:
    """Rows of the `from_atoms` layout rewritten in the larger `to_atoms` layout (zero padding).

    The existing positions keep their relative order, so ``out[:, valid]`` with ``valid`` the
    positions of a `from_atoms`-atom graph in the big layout gives the rows back.
    """
    a, b = check_max_atoms(from_atoms), check_max_atoms(to_atoms)
    if b < a:
        raise ValueError(f"to_atoms: expected >= from_atoms={a}, got {b}")
    rows = np.asarray(rows, dtype=np.int64)
    out = np.zeros((rows.shape[0], seq_len(b)), dtype=np.int64)
    out[:, :a] = rows[:, :a]
    big = {(int(i), int(j)): b + k for k, (i, j) in enumerate(zip(*pair_index(b), strict=True))}
    cols = [big[(int(i), int(j))] for i, j in zip(*pair_index(a), strict=True)]
    out[:, cols] = rows[:, a:]
    return out


def small_qm9_graphs(max_atoms: int = 4) -> dict[int, np.ndarray]:
    """Every QM9 molecule with at most `max_atoms` heavy atoms, as rows of its own size.

    QM9 is ordered by size, so these are among its first entries (48 molecules up to 4 atoms).
    """
    from shared_core.data import load, mol_graph

    require_qm9()
    smiles, _ = load("qm9-smiles", limit=100)
    by_size: dict[int, list[MolGraph]] = {}
    for s in smiles:
        g = mol_graph(s, kekulize=True)
        if g.num_atoms <= max_atoms and not (g.atoms[:, 1] != 0).any():
            by_size.setdefault(g.num_atoms, []).append(g)
    return {n: encode(gs, n)[0] for n, gs in sorted(by_size.items())}
