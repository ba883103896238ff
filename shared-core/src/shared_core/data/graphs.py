"""Molecules as graphs: SMILES, RDKit `Mol` or a 3-D `Molecule` -> `MolGraph`, and back.

The featurisation is versioned (`FEATURISATION_VERSION`); a change to the columns, their order
or their codes bumps it, so stored graphs can say which one made them.

Atom features, one int64 row per atom in RDKit's atom order (`ATOM_FEATURES`):

====  =================  ==========================================================
col   name               value
====  =================  ==========================================================
0     ``atomic_number``  Z (1 for H)
1     ``formal_charge``  formal charge (e.g. -1 for the O of a carboxylate)
2     ``is_aromatic``    1 if RDKit perceives the atom as aromatic, else 0
3     ``hybridisation``  index into `HYBRIDISATIONS` (RDKit's ``HybridizationType``)
4     ``num_hs``         total hydrogen count (implicit + explicit, not H atoms in the graph)
====  =================  ==========================================================

Bonds are stored in BOTH directions, PyG style: RDKit bond ``k`` is column ``2k``
(begin -> end) and ``2k + 1`` (end -> begin) of `edge_index` ``(2, 2 * num_bonds)``;
`bond_types` ``(2 * num_bonds,)`` codes each as an index into `BOND_TYPES` (0, "none", is
never stored: it is the code of a missing bond in a dense adjacency). With ``kekulize=True``
aromatic bonds become single/double (atom aromaticity stays as perceived).

Not featurised, so lost in a round trip: stereochemistry, isotopes, radical electrons,
atom-map numbers and bond types other than the four above (a dative bond is refused).

`graph_to_mol` rebuilds a `Mol` with every atom's hydrogen count fixed and NO valence
correction or sanitisation: a generated graph with a pentavalent carbon stays invalid, which is
what `shared_core.mol_metrics.validity` checks. RDKit is imported only inside these functions
(extra ``chem``); torch only in `MolGraph.to_torch` and torch_geometric in `MolGraph.to_pyg`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shared_core.data.molecules import Molecule
from shared_core.data.registry import require_extra

FEATURISATION_VERSION = 1
ATOM_FEATURES = ("atomic_number", "formal_charge", "is_aromatic", "hybridisation", "num_hs")
HYBRIDISATIONS = ("UNSPECIFIED", "S", "SP", "SP2", "SP3", "SP2D", "SP3D", "SP3D2", "OTHER")
BOND_TYPES = ("none", "single", "double", "triple", "aromatic")

_RDKIT_BOND_NAMES = {"SINGLE": 1, "DOUBLE": 2, "TRIPLE": 3, "AROMATIC": 4}


def _rdkit(what: str = "molecular graphs (RDKit)") -> Any:
    require_extra("shared-core", "chem", "rdkit", what)
    from rdkit import Chem

    return Chem


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a)  # a copy the caller cannot mutate behind the record's back
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class MolGraph:
    """One molecule as a graph (see the module docstring for every column and code).

    atoms ``(n, 5)`` int64 features; edge_index ``(2, 2B)`` int64, both directions;
    bond_types ``(2B,)`` int64 codes into `BOND_TYPES`; positions ``(n, 3)`` float64 in Å or
    ``None``; `kekulized` says whether aromatic bonds were written as single/double.
    """

    atoms: np.ndarray
    edge_index: np.ndarray
    bond_types: np.ndarray
    positions: np.ndarray | None = None
    kekulized: bool = False
    version: int = field(default=FEATURISATION_VERSION)

    def __post_init__(self) -> None:
        atoms = _frozen(np.asarray(self.atoms, dtype=np.int64))
        ei = _frozen(np.asarray(self.edge_index, dtype=np.int64).reshape(2, -1))
        bt = _frozen(np.asarray(self.bond_types, dtype=np.int64))
        if atoms.ndim != 2 or atoms.shape[1] != len(ATOM_FEATURES) or len(atoms) == 0:
            raise ValueError(
                f"atoms: expected shape (n >= 1, {len(ATOM_FEATURES)}), got {atoms.shape}"
            )
        n = len(atoms)
        if bt.shape != (ei.shape[1],) or ei.shape[1] % 2:
            raise ValueError(
                f"bond_types: expected shape (2B,) = ({ei.shape[1]},) with an even number of "
                f"directed edges, got {bt.shape}"
            )
        if ei.size and (ei.min() < 0 or ei.max() >= n):
            raise ValueError(
                f"edge_index: atom indices must lie in [0, {n}), got {ei.min()}..{ei.max()}"
            )
        if not np.array_equal(ei[:, 0::2], ei[::-1, 1::2]):
            raise ValueError(
                "edge_index: column 2k + 1 must be column 2k reversed (both directions)"
            )
        if bt.size and (bt.min() < 1 or bt.max() >= len(BOND_TYPES)):
            raise ValueError(f"bond_types: codes must lie in 1..{len(BOND_TYPES) - 1}, got {bt}")
        if not np.array_equal(bt[0::2], bt[1::2]):
            raise ValueError("bond_types: both directions of a bond must have the same type")
        object.__setattr__(self, "atoms", atoms)
        object.__setattr__(self, "edge_index", ei)
        object.__setattr__(self, "bond_types", bt)
        if self.positions is not None:
            pos = _frozen(np.asarray(self.positions, dtype=np.float64))
            if pos.shape != (n, 3) or not np.all(np.isfinite(pos)):
                raise ValueError(f"positions: expected finite (n, 3) = ({n}, 3), got {pos.shape}")
            object.__setattr__(self, "positions", pos)
        if self.version != FEATURISATION_VERSION:
            raise ValueError(
                f"version: this code reads featurisation {FEATURISATION_VERSION}, got {self.version}"
            )

    @property
    def num_atoms(self) -> int:
        return int(self.atoms.shape[0])

    @property
    def num_bonds(self) -> int:
        """Undirected bonds B (`edge_index` holds 2B directed edges)."""
        return int(self.edge_index.shape[1] // 2)

    @property
    def atomic_numbers(self) -> np.ndarray:
        """``(n,)`` int64."""
        return self.atoms[:, 0]

    def to_torch(self) -> dict[str, Any]:
        """``{"x": (n, 5) long, "edge_index": (2, 2B) long, "edge_attr": (2B,) long[, "pos": (n, 3) float32]}``."""
        import torch

        out = {
            "x": torch.from_numpy(self.atoms.copy()),
            "edge_index": torch.from_numpy(self.edge_index.copy()),
            "edge_attr": torch.from_numpy(self.bond_types.copy()),
        }
        if self.positions is not None:
            out["pos"] = torch.from_numpy(self.positions.astype(np.float32))
        return out

    def to_pyg(self) -> Any:
        """A ``torch_geometric.data.Data`` with the fields of `to_torch` (extra ``graphs``)."""
        require_extra("shared-core", "graphs", "torch_geometric", "MolGraph.to_pyg")
        from torch_geometric.data import Data

        return Data(**self.to_torch())


def _from_rdkit(mol: Any, kekulize: bool, positions: np.ndarray | None) -> MolGraph:
    Chem = _rdkit()
    hyb = {name: i for i, name in enumerate(HYBRIDISATIONS)}
    atoms = [
        (
            a.GetAtomicNum(),
            a.GetFormalCharge(),
            int(a.GetIsAromatic()),
            hyb.get(str(a.GetHybridization()), hyb["OTHER"]),
            a.GetTotalNumHs(),
        )
        for a in mol.GetAtoms()
    ]
    if not atoms:
        raise ValueError("mol: a molecule with no atoms has no graph")
    if kekulize:
        mol = Chem.Mol(mol)
        Chem.Kekulize(mol, clearAromaticFlags=True)
    edges, types = [], []
    for b in mol.GetBonds():
        name = str(b.GetBondType())
        if name not in _RDKIT_BOND_NAMES:
            raise ValueError(
                f"mol: bond {b.GetIdx()} ({b.GetBeginAtomIdx()}-{b.GetEndAtomIdx()}) has type "
                f"{name}; expected one of single/double/triple/aromatic"
            )
        i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
        edges += [(i, j), (j, i)]
        types += [_RDKIT_BOND_NAMES[name]] * 2
    edge_index = np.asarray(edges, dtype=np.int64).reshape(-1, 2).T
    return MolGraph(np.asarray(atoms), edge_index, np.asarray(types), positions, kekulize)


def mol_graph(source: str | Any | Molecule, *, kekulize: bool = False, charge: int = 0) -> MolGraph:
    """Featurise a SMILES string, an RDKit `Mol` or a 3-D `Molecule` (atom order kept).

    A `Mol` with a 3-D conformer, or a `Molecule`, gives `positions`. A `Molecule` has no
    bonds: they are perceived from its coordinates by RDKit's ``DetermineBonds`` with total
    `charge` (used only for a `Molecule`). That perception is a heuristic: on the first
    3,000 QM9 geometries 248 give a graph other than the published SMILES (strained cages
    such as bicyclo[1.1.1]pentane, some imines), 18 of the first 1,000 none at all
    (`ValueError`). Prefer the SMILES, or a `Mol` with a conformer, when there is one.
    """
    Chem = _rdkit()
    if isinstance(source, str):
        mol = Chem.MolFromSmiles(source)
        if mol is None:
            raise ValueError(
                f"source: invalid SMILES {source!r} (RDKit could not parse or sanitise it)"
            )
        return _from_rdkit(mol, kekulize, None)
    if isinstance(source, Molecule):
        return _from_molecule(source, kekulize, charge)
    if isinstance(source, Chem.Mol):
        positions = None
        if source.GetNumConformers() and source.GetConformer().Is3D():
            positions = np.asarray(source.GetConformer().GetPositions(), dtype=np.float64)
        return _from_rdkit(source, kekulize, positions)
    raise TypeError(
        f"source: expected a SMILES str, an RDKit Mol or a shared_core Molecule, "
        f"got {type(source).__name__}"
    )


def _from_molecule(molecule: Molecule, kekulize: bool, charge: int) -> MolGraph:
    Chem = _rdkit()
    from rdkit.Chem import rdDetermineBonds

    lines = [str(len(molecule)), molecule.name]
    lines += [
        f"{s} {x:.10f} {y:.10f} {z:.10f}"
        for s, (x, y, z) in zip(molecule.symbols, molecule.positions, strict=True)
    ]
    mol = Chem.MolFromXYZBlock("\n".join(lines) + "\n")
    if mol is None:
        raise ValueError(f"source: RDKit could not read molecule {molecule.name!r} as XYZ")
    try:
        rdDetermineBonds.DetermineBonds(mol, charge=charge)
    except ValueError as e:
        raise ValueError(
            f"source: no bond orders fit molecule {molecule.name!r} with charge={charge}: {e}"
        ) from None
    return _from_rdkit(mol, kekulize, molecule.positions)


def graph_to_mol(graph: MolGraph) -> Any:
    """The RDKit `Mol` of `graph`, NOT sanitised and with no valence correction.

    Every atom keeps its charge, aromatic flag and hydrogen count (``NoImplicit``), so
    ``Chem.SanitizeMol`` on the result is the validity check; ``Chem.MolToSmiles`` after a
    successful sanitisation gives the canonical SMILES. Positions become a 3-D conformer.
    """
    if not isinstance(graph, MolGraph):
        raise TypeError(f"graph: expected a MolGraph, got {type(graph).__name__}")
    Chem = _rdkit()
    rdkit_types = {code: getattr(Chem.BondType, BOND_TYPES[code].upper()) for code in range(1, 5)}
    rw = Chem.RWMol()
    for z, q, aromatic, _, hs in graph.atoms.tolist():
        atom = Chem.Atom(z)
        atom.SetFormalCharge(q)
        atom.SetIsAromatic(bool(aromatic))
        atom.SetNumExplicitHs(hs)
        atom.SetNoImplicit(True)
        rw.AddAtom(atom)
    for (i, j), t in zip(
        graph.edge_index[:, 0::2].T.tolist(), graph.bond_types[0::2].tolist(), strict=True
    ):
        rw.AddBond(i, j, rdkit_types[t])
        if t == 4:
            rw.GetBondBetweenAtoms(i, j).SetIsAromatic(True)
    if graph.positions is not None:
        conf = Chem.Conformer(graph.num_atoms)
        for k, xyz in enumerate(graph.positions.tolist()):
            conf.SetAtomPosition(k, xyz)
        conf.Set3D(True)
        rw.AddConformer(conf, assignId=True)
    return rw.GetMol()
