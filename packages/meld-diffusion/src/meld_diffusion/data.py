"""Molecular graphs as flat token rows, the layout `masked_diffusion` works on.

A graph with at most ``N = max_atoms`` heavy atoms is one row of ``L = N + N (N - 1) / 2``
tokens: first the N atom types (QM9's `ATOM_TYPES`: C, N, O, F as 0..3, or a vocabulary read
from the user's file, e.g. ``("C", "N", "O", "S", "Cl", "N+", "O-")``: an element symbol with
its formal charge), then the bond type of every pair ``i < j`` in row-major upper-triangular
order (`BOND_TYPES`: none, single, double, triple as 0..3). One row is a plain sequence over
``vocab_size(K) = max(K, 4)`` tokens for K atom types (QM9: ``VOCAB_SIZE = 4``) and the mask
id is that size (``masked_diffusion``'s convention).
Positions of atoms ``>= n_atoms`` (and their pairs) are padding: they hold 0, are never
masked and never scored.

Molecules come from QM9 (``shared_core.data.load("qm9-smiles")``), kekulised, hydrogens
implicit; the few charged ones (about 0.2 %) are dropped because the vocabulary has no charge.
`decode` rebuilds a `shared_core.data.MolGraph` whose hydrogen counts fill each atom's default
valence (`valence`: C 4, N 3, O 2, F 1, P 3, S 2, halogens 1; N+ 4, O- 1, C- 3) and NOTHING
else: an over-bonded atom keeps its valence, and
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
ELEMENTS = {"C": 6, "N": 7, "O": 8, "F": 9, "P": 15, "S": 16, "Cl": 17, "Br": 35, "I": 53}
"""The elements an atom type may have (the paper's ZINC250k set), symbol -> Z."""
_VALENCE = {6: 4, 7: 3, 8: 2, 9: 1, 15: 3, 16: 2, 17: 1, 35: 1, 53: 1}
BOND_TYPES = ("none", "single", "double", "triple")  # codes = shared_core BOND_TYPES[:4]
VOCAB_SIZE = 4
MASK_ID = VOCAB_SIZE
QM9_MAX_ATOMS = 9


def atom_label(z: int, charge: int) -> str:
    """The atom type of element `z` with formal `charge`: ``"N"``, ``"N+"``, ``"O-"``, ``"C2-"``.

    ValueError for an element outside `ELEMENTS`.
    """
    symbol = next((s for s, k in ELEMENTS.items() if k == z), None)
    if symbol is None:
        raise ValueError(f"element: Z={z} is not supported; expected one of {', '.join(ELEMENTS)}")
    if charge == 0:
        return symbol
    sign = "+" if charge > 0 else "-"
    return f"{symbol}{'' if abs(charge) == 1 else abs(charge)}{sign}"


def parse_label(label: str) -> tuple[int, int]:
    """``(Z, charge)`` of an atom type written by `atom_label` (ValueError otherwise)."""
    body = label.rstrip("+-")
    sign = label[len(body) :]
    symbol = body.rstrip("0123456789")
    digits = body[len(symbol) :]
    if symbol not in ELEMENTS or len(set(sign)) > 1 or (digits and len(sign) != 1):
        raise ValueError(
            f"atom_types: {label!r} is not an element of {tuple(ELEMENTS)} with an optional "
            "charge such as 'N+' or 'O-'"
        )
    size = int(digits) if digits else (1 if sign else 0)
    return ELEMENTS[symbol], -size if sign == "-" else size


def valence(label: str) -> int:
    """The valence `decode` fills with hydrogens: the element's default, plus the charge for
    N/O/P/S/halogens (N+ 4, O- 1), minus its size for C (C- 3, C+ 3)."""
    z, q = parse_label(label)
    return max(0, 4 - abs(q)) if z == 6 else max(0, _VALENCE[z] + q)


def vocab_size(n_atom_types: int) -> int:
    """Tokens of a row for `n_atom_types` atom types: ``max(n_atom_types, 4)``; mask id = it."""
    if isinstance(n_atom_types, bool) or not isinstance(n_atom_types, int) or n_atom_types < 1:
        raise ValueError(f"n_atom_types: expected an int >= 1, got {n_atom_types!r}")
    return max(n_atom_types, len(BOND_TYPES))


def check_atom_types(atom_types: object) -> tuple[str, ...]:
    """Raise unless `atom_types` is a non-empty tuple of distinct atom types (`parse_label`)."""
    if not isinstance(atom_types, (tuple, list)) or not atom_types:
        raise ValueError(f"atom_types: expected a non-empty tuple of labels, got {atom_types!r}")
    labels = tuple(atom_types)
    for label in labels:
        if not isinstance(label, str):
            raise TypeError(f"atom_types: expected str labels, got {label!r}")
        parse_label(label)
    if len(set(labels)) != len(labels):
        raise ValueError(f"atom_types: labels must be distinct, got {labels}")
    return labels


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
    x: torch.Tensor,
    n_atoms: torch.Tensor,
    max_atoms: int,
    name: str = "x0",
    vocab: int = VOCAB_SIZE,
) -> None:
    """Raise unless `x` (batch, L) and `n_atoms` (batch,) describe padded graph rows (tokens
    below `vocab`)."""
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
    if int(x.min()) < 0 or int(x.max()) >= vocab:
        raise ValueError(
            f"{name}: expected clean tokens in [0, {vocab}), got range "
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


def encode(
    graphs: Sequence[MolGraph], max_atoms: int, atom_types: Sequence[str] = ATOM_TYPES
) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``(len(graphs), L)`` int64 and atom counts ``(len(graphs),)`` of kekulised graphs.

    Raises ValueError for a graph with more than `max_atoms` atoms, an atom (element and
    formal charge) outside `atom_types` or an aromatic bond (call
    ``mol_graph(..., kekulize=True)``).
    """
    n = check_max_atoms(max_atoms)
    types = check_atom_types(atom_types)
    pos = {(int(a), int(b)): n + k for k, (a, b) in enumerate(zip(*pair_index(n), strict=True))}
    rows = np.zeros((len(graphs), seq_len(n)), dtype=np.int64)
    counts = np.zeros(len(graphs), dtype=np.int64)
    for r, g in enumerate(graphs):
        if not isinstance(g, MolGraph):
            raise TypeError(f"graphs: entry {r} is a {type(g).__name__}, expected a MolGraph")
        if g.num_atoms > n:
            raise ValueError(f"graphs: entry {r} has {g.num_atoms} atoms > max_atoms={n}")
        for k, (z, charge) in enumerate(g.atoms[:, :2].tolist()):
            label = atom_label(z, charge) if z in _VALENCE else f"Z={z}"
            if label not in types:
                raise ValueError(
                    f"graphs: entry {r} atom {k} is {label} (Z={z}, charge {charge}); "
                    f"expected an atom among {types}"
                )
            rows[r, k] = types.index(label)
        for (a, b), t in zip(
            g.edge_index[:, 0::2].T.tolist(), g.bond_types[0::2].tolist(), strict=True
        ):
            if t >= len(BOND_TYPES):
                raise ValueError(f"graphs: entry {r} has an aromatic bond; kekulise it first")
            rows[r, pos[(min(a, b), max(a, b))]] = t
        counts[r] = g.num_atoms
    return rows, counts


def decode(
    rows: np.ndarray | torch.Tensor,
    n_atoms: np.ndarray | torch.Tensor,
    max_atoms: int,
    atom_types: Sequence[str] = ATOM_TYPES,
) -> list[MolGraph]:
    """`MolGraph` of each row: the inverse of `encode` (hydrogens fill default valences).

    No valence correction: an atom whose bonds exceed its default valence gets 0 hydrogens and
    stays over-bonded, so RDKit sanitisation rejects the molecule.
    """
    rows = np.asarray(rows.cpu() if hasattr(rows, "cpu") else rows, dtype=np.int64)
    counts = np.asarray(n_atoms.cpu() if hasattr(n_atoms, "cpu") else n_atoms, dtype=np.int64)
    n = check_max_atoms(max_atoms)
    types = check_atom_types(atom_types)
    zq = np.asarray([parse_label(t) for t in types], dtype=np.int64)  # (K, 2)
    val = np.asarray([valence(t) for t in types], dtype=np.int64)
    if rows.ndim != 2 or rows.shape[1] != seq_len(n) or counts.shape != (rows.shape[0],):
        raise ValueError(
            f"rows, n_atoms: expected shapes (b, {seq_len(n)}) and (b,), got {rows.shape} and "
            f"{counts.shape}"
        )
    if counts.size and (counts.min() < 1 or counts.max() > n):
        raise ValueError(
            f"n_atoms: expected atom counts in [1, max_atoms={n}], got {counts.min()}..{counts.max()}"
        )
    if rows.size and (rows.min() < 0 or rows.max() >= vocab_size(len(types))):
        raise ValueError(
            f"rows: expected tokens in [0, {vocab_size(len(types))}) (no mask left), got "
            f"{rows.min()}..{rows.max()}"
        )
    pi, pj = pair_index(n)
    out = []
    for row, m in zip(rows, counts.tolist(), strict=True):
        kinds = row[:m]
        if kinds.size and kinds.max() >= len(types):
            raise ValueError(f"rows: atom tokens must be < {len(types)} atom types, got {kinds}")
        bonds = row[n:]
        if (bonds >= len(BOND_TYPES)).any():
            raise ValueError(f"rows: bond tokens must be < {len(BOND_TYPES)}, got {bonds.max()}")
        keep = (bonds > 0) & (pj < m)
        a, b, t = pi[keep], pj[keep], bonds[keep]
        order = np.zeros(m, dtype=np.int64)
        np.add.at(order, a, t)
        np.add.at(order, b, t)
        hs = np.maximum(0, val[kinds] - order)
        atoms = np.zeros((m, 5), dtype=np.int64)
        atoms[:, :2] = zq[kinds]
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
