"""Metrics for molecule generators: validity, uniqueness, novelty, conformer coverage/matching.

Molecules may be given as SMILES strings, RDKit `Mol` objects or `shared_core.data.MolGraph`
records. Validity is RDKit sanitisation of the molecule AS GIVEN: a graph is rebuilt by
`graph_to_mol` with its hydrogen counts fixed and no valence correction, so a pentavalent
carbon stays invalid. Uniqueness and novelty follow MOSES (Polykovskiy et al. 2020) on
canonical isomeric SMILES. RDKit is imported inside the functions (extra ``chem``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from shared_core.data.graphs import MolGraph, graph_to_mol
from shared_core.data.registry import require_extra


def _chem() -> Any:
    require_extra("shared-core", "chem", "rdkit", "molecule metrics (RDKit)")
    from rdkit import Chem

    return Chem


def _sanitized(item: Any, name: str, i: int) -> Any:
    """A sanitised copy of `item`, or ``None`` when RDKit rejects it."""
    Chem = _chem()
    from rdkit import rdBase

    with rdBase.BlockLogs():  # an invalid molecule is a result here, not a warning
        if isinstance(item, str):
            return Chem.MolFromSmiles(item)
        if isinstance(item, MolGraph):
            mol = graph_to_mol(item)
        elif isinstance(item, Chem.Mol):
            mol = Chem.Mol(item)
        else:
            raise TypeError(
                f"{name}: entry {i} is a {type(item).__name__}; expected a SMILES str, an "
                "RDKit Mol or a MolGraph"
            )
        try:
            Chem.SanitizeMol(mol)
        except (ValueError, RuntimeError):  # RDKit's MolSanitizeException subclasses ValueError
            return None
        return mol


def _items(mols: Sequence[Any], name: str) -> Sequence[Any]:
    if isinstance(mols, (str, MolGraph)) or not isinstance(mols, Sequence) or len(mols) == 0:
        raise ValueError(f"{name}: expected a non-empty sequence of molecules, got {mols!r:.80}")
    return mols


def canonical_smiles(mols: Sequence[Any], name: str = "mols") -> list[str | None]:
    """Canonical isomeric SMILES of each molecule, ``None`` where it fails sanitisation.

    `name` is the argument named in errors (``"training"`` when `novelty` calls it).
    """
    Chem = _chem()
    out: list[str | None] = []
    for i, item in enumerate(_items(mols, name)):
        mol = _sanitized(item, name, i)
        out.append(None if mol is None else Chem.MolToSmiles(mol))
    return out


def validity(mols: Sequence[Any]) -> float:
    """Fraction of `mols` that RDKit sanitises with no correction."""
    smiles = canonical_smiles(mols)
    return sum(s is not None for s in smiles) / len(smiles)


def _valid(mols: Sequence[Any], name: str) -> list[str]:
    valid = [s for s in canonical_smiles(_items(mols, name)) if s is not None]
    if not valid:
        raise ValueError(f"{name}: none of the {len(mols)} molecules is valid")
    return valid


def uniqueness(mols: Sequence[Any]) -> float:
    """Distinct canonical SMILES among the valid molecules / number of valid molecules (MOSES)."""
    valid = _valid(mols, "mols")
    return len(set(valid)) / len(valid)


def novelty(mols: Sequence[Any], training: Sequence[Any]) -> float:
    """Fraction of the distinct valid molecules whose canonical SMILES is not in `training` (MOSES).

    Invalid training entries are ignored, as MOSES does: no valid molecule can equal one.
    """
    generated = set(_valid(mols, "mols"))
    train = {s for s in canonical_smiles(training, "training") if s is not None}
    return len(generated - train) / len(generated)


def conformer_rmsd(reference: Sequence[Any], generated: Sequence[Any]) -> np.ndarray:
    """Heavy-atom RMSD matrix ``(n_ref, n_gen)`` in Å between conformers of one molecule.

    Each entry is an RDKit `Mol` (its first conformer) or a `MolGraph` with positions.
    Hydrogens are removed (``RemoveHs``), then ``rdMolAlign.GetBestRMS`` aligns each
    generated conformer onto each reference, minimising over symmetry-equivalent atom maps.
    """
    Chem = _chem()
    from rdkit.Chem import rdMolAlign

    def heavy(items: Sequence[Any], name: str) -> list[Any]:
        out = []
        for i, item in enumerate(_items(items, name)):
            if isinstance(item, MolGraph) and item.positions is None:
                raise ValueError(f"{name}: entry {i} is a MolGraph without positions")
            mol = _sanitized(item, name, i)
            if mol is None or isinstance(item, str) or mol.GetNumConformers() == 0:
                raise ValueError(f"{name}: entry {i} is not a valid molecule with a conformer")
            out.append(Chem.RemoveHs(mol))
        return out

    refs, gens = heavy(reference, "reference"), heavy(generated, "generated")
    rmsd = np.empty((len(refs), len(gens)))
    for i, ref in enumerate(refs):
        for j, gen in enumerate(gens):
            try:
                rmsd[i, j] = rdMolAlign.GetBestRMS(Chem.Mol(gen), ref)
            except RuntimeError:
                raise ValueError(
                    f"generated: entry {j} is not the molecule of reference entry {i} "
                    "(no atom mapping between them)"
                ) from None
    return rmsd


def coverage_matching(rmsd: np.ndarray, threshold: float = 0.5) -> dict[str, float]:
    """COV-R, MAT-R, COV-P and MAT-P of an RMSD matrix ``(n_ref, n_gen)`` (GEOM benchmarks).

    As in ConfGF (Shi et al. 2021) and GeoDiff (Xu et al. 2022), with threshold delta in Å
    (0.5 for GEOM-QM9, 1.25 for GEOM-Drugs):
    COV-R = fraction of reference conformers with some generated one at RMSD <= delta;
    MAT-R = mean over reference conformers of the smallest RMSD to a generated one;
    COV-P and MAT-P swap the roles (precision: generated conformers near some reference).
    """
    r = np.asarray(rmsd, dtype=np.float64)
    if r.ndim != 2 or r.size == 0 or not np.all(np.isfinite(r)) or np.any(r < 0):
        raise ValueError(
            f"rmsd: expected a non-empty (n_ref, n_gen) array of finite RMSDs >= 0, got shape {r.shape}"
        )
    if not threshold > 0:
        raise ValueError(f"threshold: expected a positive RMSD in Å, got {threshold!r}")
    best_ref, best_gen = r.min(axis=1), r.min(axis=0)
    return {
        "COV-R": float(np.mean(best_ref <= threshold)),
        "MAT-R": float(best_ref.mean()),
        "COV-P": float(np.mean(best_gen <= threshold)),
        "MAT-P": float(best_gen.mean()),
    }
