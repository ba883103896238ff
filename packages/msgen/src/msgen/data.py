"""QM9 conformers and the coarse scales of a molecule (heavy atoms, Murcko scaffold).

A conformer here is a `shared_core.data.MolGraph` with `positions` (Å): atoms in the
order of the source geometry, hydrogens explicit. QM9 (qm9pack) gives ONE B3LYP minimum
per molecule, so "reference conformers" are that single DFT geometry.

The coarse scales of MSGEN are atom subsets of the fine graph:
``heavy`` (every atom but hydrogen; QM9's two-stage mode) and ``scaffold`` (the Bemis-Murcko
scaffold: rings and the linkers between them; the first stage of the three-stage mode
for GEOM-Drugs). `subgraph` turns a subset into a graph of its own (induced bonds,
indices renumbered in the subset's order).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shared_core.data import MolGraph

SCALES = ("heavy", "scaffold")
"""Coarse scales `coarse_atoms` knows."""

ELEMENTS = (1, 5, 6, 7, 8, 9, 14, 15, 16, 17, 35, 53)
"""Atomic numbers the denoiser embeds (QM9 uses H, C, N, O, F; the rest for GEOM-Drugs)."""


def element_index(numbers: np.ndarray) -> np.ndarray:
    """``(n,)`` atomic numbers -> indices into `ELEMENTS`; an unknown element raises."""
    lookup = {z: i for i, z in enumerate(ELEMENTS)}
    bad = sorted({int(z) for z in numbers} - set(lookup))
    if bad:
        raise ValueError(f"atoms: atomic numbers {bad} are not among the embedded {ELEMENTS}")
    return np.asarray([lookup[int(z)] for z in numbers], dtype=np.int64)


def describe(graph: MolGraph) -> str:
    """A short name of a molecule for error messages: its SMILES (RDKit), else its formula."""
    try:
        from rdkit import Chem

        from shared_core.data import graph_to_mol

        mol = graph_to_mol(MolGraph(graph.atoms, graph.edge_index, graph.bond_types))
        try:
            Chem.SanitizeMol(mol)
            mol = Chem.RemoveHs(mol)
        except Exception:
            pass
        return repr(Chem.MolToSmiles(mol))
    except Exception:
        counts: dict[int, int] = {}
        for z in graph.atomic_numbers.tolist():
            counts[int(z)] = counts.get(int(z), 0) + 1
        return "atomic numbers " + " ".join(f"{z}x{c}" for z, c in sorted(counts.items()))


def is_connected(graph: MolGraph) -> bool:
    """Whether the bond graph of `graph` is one fragment."""
    n = graph.num_atoms
    seen = np.zeros(n, dtype=bool)
    seen[0] = True
    ei = graph.edge_index
    while True:
        grow = seen.copy()
        grow[ei[1][seen[ei[0]]]] = True
        if grow.sum() == seen.sum():
            return bool(seen.all())
        seen = grow


def check_molecule(graph: object, name: str = "graph", *, conformer: bool = False) -> MolGraph:
    """`graph` as a MolGraph the generators can use, or a TypeError/ValueError naming it.

    Checked: every element is one the featuriser embeds (`ELEMENTS`), the bond graph is one
    fragment (the order-3 local graph and the upsampling walk bonds), and with `conformer`
    finite 3-D positions ``(n, 3)``.
    """
    if not isinstance(graph, MolGraph):
        raise TypeError(f"{name}: expected a shared_core MolGraph, got {type(graph).__name__}")
    bad = sorted({int(z) for z in graph.atomic_numbers} - set(ELEMENTS))
    if bad:
        raise ValueError(
            f"{name}: molecule {describe(graph)} has atomic numbers {bad} the featuriser does "
            f"not know (it embeds {ELEMENTS})"
        )
    if graph.num_atoms > 1 and not is_connected(graph):
        raise ValueError(
            f"{name}: molecule {describe(graph)} has disconnected fragments; expected one "
            "connected molecule (split salts/mixtures into separate graphs)"
        )
    if conformer:
        pos = graph.positions
        if pos is None:
            raise ValueError(
                f"{name}: molecule {describe(graph)} has no 3-D coordinates (positions is None); "
                "expected a conformer"
            )
        a = np.asarray(pos)
        if a.shape != (graph.num_atoms, 3) or not np.all(np.isfinite(a)):
            raise ValueError(
                f"{name}: molecule {describe(graph)} needs finite 3-D coordinates of shape "
                f"({graph.num_atoms}, 3), got shape {a.shape}"
            )
    return graph


def check_conformer(graph: object, name: str = "graph") -> MolGraph:
    """`check_molecule` with 3-D positions required."""
    return check_molecule(graph, name, conformer=True)


def heavy_atoms(graph: MolGraph) -> np.ndarray:
    """Indices of the non-hydrogen atoms, ascending."""
    return np.flatnonzero(graph.atomic_numbers != 1)


def heavy_mol(graph: MolGraph) -> Any:
    """The sanitised RDKit Mol of the heavy atoms (``RemoveHs``; row i = ``heavy_atoms(graph)[i]``).

    Hydrogens removed this way are counted on their heavy atom, so aromatic N-H rings stay
    kekulisable (an induced subgraph would lose them).
    """
    from rdkit import Chem

    from shared_core.data import graph_to_mol

    mol = graph_to_mol(MolGraph(graph.atoms, graph.edge_index, graph.bond_types))
    Chem.SanitizeMol(mol)
    heavy = Chem.RemoveHs(mol)
    if heavy.GetNumAtoms() != heavy_atoms(graph).size:
        raise ValueError(
            "graph: RDKit kept a hydrogen it could not remove (e.g. H2 or a bridging H)"
        )
    return heavy


def scaffold_atoms(graph: MolGraph) -> np.ndarray:
    """Indices of the Bemis-Murcko scaffold atoms (RDKit), ascending.

    Raises ValueError for an acyclic molecule (its scaffold is empty), which has no
    three-stage decomposition.
    """
    from rdkit import Chem
    from rdkit.Chem.Scaffolds import MurckoScaffold

    heavy = heavy_atoms(graph)
    mol = heavy_mol(graph)
    scaffold = MurckoScaffold.GetScaffoldForMol(mol)
    if scaffold.GetNumAtoms() == 0:
        raise ValueError(
            f"graph: molecule {Chem.MolToSmiles(mol)!r} has no ring, so no "
            "Murcko scaffold; use scales=('heavy',) (two stages) for it"
        )
    match = mol.GetSubstructMatch(scaffold)
    if len(match) != scaffold.GetNumAtoms():
        raise ValueError("graph: RDKit could not map the Murcko scaffold back onto the molecule")
    return np.asarray(sorted(heavy[list(match)].tolist()), dtype=np.int64)


def coarse_atoms(graph: MolGraph, scale: str) -> np.ndarray:
    """The atoms of `graph` kept at coarse `scale` (one of `SCALES`)."""
    if scale == "heavy":
        return heavy_atoms(graph)
    if scale == "scaffold":
        return scaffold_atoms(graph)
    raise ValueError(f"scale: expected one of {SCALES}, got {scale!r}")


def subgraph(graph: MolGraph, atoms: Sequence[int] | np.ndarray) -> MolGraph:
    """The induced subgraph on `atoms` (renumbered 0.. in the given order), positions kept."""
    idx = np.asarray(atoms, dtype=np.int64)
    if idx.ndim != 1 or idx.size == 0 or len(set(idx.tolist())) != idx.size:
        raise ValueError(f"atoms: expected distinct atom indices, got {idx.tolist()}")
    if idx.min() < 0 or idx.max() >= graph.num_atoms:
        raise ValueError(f"atoms: indices must lie in [0, {graph.num_atoms}), got {idx.tolist()}")
    new = np.full(graph.num_atoms, -1, dtype=np.int64)
    new[idx] = np.arange(idx.size)
    ei = graph.edge_index
    keep = (new[ei[0]] >= 0) & (new[ei[1]] >= 0)  # keeps (2k, 2k+1) pairs together
    positions = None if graph.positions is None else graph.positions[idx]
    return MolGraph(
        graph.atoms[idx], new[ei[:, keep]], graph.bond_types[keep], positions, graph.kekulized
    )


def molecule(smiles: str) -> MolGraph:
    """The graph of `smiles` with explicit hydrogens (what `MSGEN.sample` needs), no positions."""
    from rdkit import Chem

    from shared_core.data import mol_graph

    if not isinstance(smiles, str):
        raise TypeError(f"smiles: expected a SMILES str, got {type(smiles).__name__}")
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise ValueError(
            f"smiles: invalid SMILES {smiles!r} (RDKit could not parse or sanitise it)"
        )
    return mol_graph(Chem.AddHs(mol))


def with_positions(graph: MolGraph, positions: np.ndarray) -> MolGraph:
    """`graph` with new `positions` ``(n, 3)`` Å."""
    return MolGraph(graph.atoms, graph.edge_index, graph.bond_types, positions, graph.kekulized)


def _plain_smiles(source: str | MolGraph) -> str | None:
    """Canonical SMILES without hydrogens or stereo, ``None`` when RDKit rejects it."""
    from rdkit import Chem

    from shared_core.data import graph_to_mol

    if isinstance(source, str):
        mol = Chem.MolFromSmiles(source)
        if mol is None:
            return None
    else:
        mol = graph_to_mol(source)
        try:
            Chem.SanitizeMol(mol)
        except (ValueError, RuntimeError):
            return None
        mol = Chem.RemoveHs(mol)
    Chem.RemoveStereochemistry(mol)
    return str(Chem.MolToSmiles(mol))


def qm9_conformers(
    n_train: int, n_test: int, *, pool: int = 3000, seed: int = 0, min_heavy: int = 3
) -> tuple[list[MolGraph], list[MolGraph]]:
    """Disjoint random train/test QM9 conformers (B3LYP geometries) from the first `pool`.

    Bonds are perceived from the coordinates (RDKit ``DetermineBonds``); a molecule is kept
    only when that graph's canonical SMILES equals the published SMILES (stereo removed)
    and it has at least `min_heavy` heavy atoms (so that RMSD after ``RemoveHs`` means
    something). QM9 is ordered by size: the first 3,000 molecules have up to 8 heavy atoms.
    """
    for name, v in (("n_train", n_train), ("n_test", n_test), ("pool", pool)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name}: expected a positive int, got {v!r}")
    from rdkit import rdBase

    from shared_core.data import load, mol_graph, require_extra

    require_extra("msgen", "data", "rdkit", "QM9 conformers")
    require_extra("msgen", "data", "qm9pack", "QM9 conformers")
    molecules = load("qm9", limit=pool)
    order = np.random.default_rng(seed).permutation(len(molecules))
    kept: list[MolGraph] = []
    with rdBase.BlockLogs():  # a failed bond perception is a skipped molecule here
        for i in order.tolist():
            m = molecules[i]
            if int((m.numbers > 1).sum()) < min_heavy:
                continue
            try:
                g = mol_graph(m)
            except ValueError:
                continue
            published = _plain_smiles(str(m.properties.get("smiles", "")))
            if published is None or _plain_smiles(g) != published:
                continue
            kept.append(g)
            if len(kept) == n_train + n_test:
                break
    if len(kept) < n_train + n_test:
        raise ValueError(
            f"pool: only {len(kept)} usable molecules among the first {pool} of QM9, "
            f"need n_train + n_test = {n_train + n_test}; raise pool"
        )
    return kept[:n_train], kept[n_train:]


@dataclass(frozen=True)
class ConformerSet:
    """One molecule and its reference conformers: `graph` (positions = the first one) and
    `conformers` ``(c, n, 3)`` Å, atoms in the graph's order."""

    graph: MolGraph
    conformers: np.ndarray
    smiles: str = ""


def read_geodiff_pickle(path: str | os.PathLike[str]) -> list[ConformerSet]:
    """GEOM conformers in GeoDiff's / MSGEN's format (``train_data_40k.pkl``, ``test_data_1k.pkl``).

    Such a file is a pickled list of ``torch_geometric.data.Data``, one per conformer, with
    ``pos`` ``(n, 3)``, ``rdmol`` (hydrogens explicit) and ``smiles`` (``idx`` when present),
    as GeoDiff's ``rdmol_to_data`` writes them. Conformers are grouped by ``idx`` (else
    ``smiles``) as GeoDiff's ``PackedConformationDataset`` does. Unpickling runs code from the
    file: read only files you trust. Needs torch_geometric (extra ``geom``).
    """
    import pickle
    from pathlib import Path

    from shared_core.data import mol_graph, require_extra

    require_extra("msgen", "geom", "torch_geometric", "GEOM pickles in GeoDiff's format")
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no file {str(p)!r} (a GeoDiff-format GEOM pickle)")
    with p.open("rb") as f:
        data = pickle.load(f)
    if not isinstance(data, list) or not data:
        raise ValueError(
            f"path: expected a non-empty pickled list of Data objects, got {type(data).__name__}"
        )
    groups: dict[object, list[object]] = {}
    for i, d in enumerate(data):
        for attr in ("pos", "rdmol", "smiles"):
            if getattr(d, attr, None) is None:
                raise ValueError(f"path: entry {i} has no {attr!r} (not GeoDiff's format)")
        idx = getattr(d, "idx", None)
        key = int(idx) if idx is not None else str(d.smiles)
        groups.setdefault(key, []).append(d)
    out = []
    for name, confs in groups.items():
        first: object = confs[0]
        graph = mol_graph(first.rdmol)  # type: ignore[attr-defined]
        pos = np.stack([np.asarray(c.pos, dtype=np.float64) for c in confs])  # type: ignore[attr-defined]
        if pos.shape[1:] != (graph.num_atoms, 3):
            raise ValueError(
                f"path: molecule {name!r} has {graph.num_atoms} atoms in rdmol but positions "
                f"of shape {pos.shape[1:]}"
            )
        out.append(ConformerSet(with_positions(graph, pos[0]), pos, str(first.smiles)))  # type: ignore[attr-defined]
    return out
