"""Bond orders of padded poses, the edge attributes of the paper's classifier (`mpnn`).

The official code reads bonds from torch_geometric's QM9 (the QM9 SDF); the qm9pack CSV has
coordinates and SMILES only, so bonds are perceived from the geometry with RDKit
(``rdDetermineBonds.DetermineBonds``, charge 0) and written in Kekulé form. Where bond
orders cannot be assigned (RDKit's valence check fails), the connectivity alone
(``DetermineConnectivity``) is kept with every bond single, and the molecule is counted.
RDKit is the ``chem`` extra.
"""

from __future__ import annotations

import numpy as np

from orient_bias.frames import Poses
from shared_core.data import require_extra

__all__ = ["bond_matrix"]

_CODES = {"SINGLE": 1, "DOUBLE": 2, "TRIPLE": 3, "AROMATIC": 4}


def bond_matrix(poses: Poses) -> tuple[np.ndarray, int]:
    """``(bonds (B, N, N) int8, n_fallback)``: bond codes 0 none, 1 single, 2 double, 3 triple
    (4 aromatic is not produced: Kekulé form), symmetric; `n_fallback` molecules kept only
    their connectivity (all bonds single)."""
    require_extra("orient-bias", "chem", "rdkit", "bond perception (RDKit)")
    from rdkit import Chem, RDLogger
    from rdkit.Chem import rdDetermineBonds

    if not isinstance(poses, Poses):
        raise TypeError(f"poses: expected a Poses batch (see `pad`), got {type(poses).__name__}")
    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]
    table = Chem.GetPeriodicTable()
    B, N = poses.numbers.shape
    out = np.zeros((B, N, N), dtype=np.int8)
    fallback = 0
    for b in range(B):
        k = int(poses.n_atoms[b])
        z, x = poses.numbers[b, :k], poses.positions[b, :k]
        block = f"{k}\n\n" + "\n".join(
            f"{table.GetElementSymbol(int(zi))} {p[0]:.8f} {p[1]:.8f} {p[2]:.8f}"
            for zi, p in zip(z, x, strict=True)
        )
        mol = Chem.MolFromXYZBlock(block)
        try:
            rdDetermineBonds.DetermineBonds(mol, charge=0)
            Chem.Kekulize(mol, clearAromaticFlags=True)
        except (ValueError, RuntimeError):
            mol = Chem.MolFromXYZBlock(block)
            rdDetermineBonds.DetermineConnectivity(mol)
            fallback += 1
        for bond in mol.GetBonds():
            i, j = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
            out[b, i, j] = out[b, j, i] = _CODES.get(str(bond.GetBondType()), 1)
    return out, fallback
