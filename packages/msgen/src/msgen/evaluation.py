"""Evaluation as the public code does it, and the RDKit baselines.

- RMSD: RDKit ``GetBestRMS`` after ``RemoveHs`` (symmetry-aware alignment), through
  `shared_core.mol_metrics.conformer_rmsd`; COV/MAT through
  `shared_core.mol_metrics.coverage_matching` (COV-R, MAT-R, COV-P, MAT-P at delta,
  0.5 Å for QM9), averaged over molecules as GeoDiff's ``CovMatEvaluator`` does.
  With QM9's single DFT minimum per molecule, COV-R is the share of molecules whose best
  of k generated conformers lies within delta of it and MAT-R the mean best-of-k RMSD.
- Chemical plausibility: bond lengths against RDKit's UFF rest lengths (``r0``): the mean
  absolute error and the share of conformers with every bond within 0.75-1.25 x r0.
- Baselines: ETKDGv3 (``EmbedMultipleConfs``, seeded), optionally MMFF-optimised, and
  random coordinates (the diffusion prior, N(0, I) per coordinate).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from msgen.data import with_positions
from shared_core.data import MolGraph, graph_to_mol


def _mol(graph: MolGraph) -> Any:
    from rdkit import Chem

    mol = graph_to_mol(graph)
    Chem.SanitizeMol(mol)
    return mol


def _check_samples(graph: MolGraph, samples: np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(samples, dtype=np.float64)
    if a.ndim != 3 or a.shape[1:] != (graph.num_atoms, 3) or a.shape[0] < 1:
        raise ValueError(
            f"{name}: expected shape (k >= 1, {graph.num_atoms}, 3) for this molecule, got {a.shape}"
        )
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: non-finite coordinates")
    return a


def rmsd_matrix(
    reference: MolGraph, samples: np.ndarray, conformers: np.ndarray | None = None
) -> np.ndarray:
    """``(c, k)`` heavy-atom best RMSD (Å) of `samples` ``(k, n, 3)`` to the reference conformers.

    conformers ``(c, n, 3)``: the reference conformers; default `reference`'s positions (c = 1).
    """
    from shared_core.mol_metrics import conformer_rmsd

    a = _check_samples(reference, samples, "samples")
    if conformers is None:
        if reference.positions is None:
            raise ValueError("reference: expected a MolGraph with positions or `conformers`")
        conformers = reference.positions[None]
    r = _check_samples(reference, conformers, "conformers")
    return conformer_rmsd(
        [with_positions(reference, x) for x in r], [with_positions(reference, x) for x in a]
    )


def uff_bond_lengths(graph: MolGraph) -> tuple[np.ndarray, np.ndarray]:
    """Bonds ``(B, 2)`` (one direction each) and their UFF rest lengths ``(B,)`` in Å."""
    from rdkit.Chem import rdForceFieldHelpers

    mol = _mol(graph)
    bonds = graph.edge_index[:, 0::2].T
    r0 = []
    for i, j in bonds.tolist():
        params = rdForceFieldHelpers.GetUFFBondStretchParams(mol, i, j)
        if params is None:
            raise ValueError(f"graph: UFF has no bond-stretch parameters for bond ({i}, {j})")
        r0.append(params[1])
    return bonds, np.asarray(r0)


def bond_quality(
    graph: MolGraph, samples: np.ndarray, lo: float = 0.75, hi: float = 1.25
) -> dict[str, float]:
    """Bond lengths of `samples` ``(k, n, 3)`` against UFF ``r0``.

    ``bond_mae``: mean |d - r0| (Å); ``bonds_ok``: share of conformers with every bond in
    [lo, hi] x r0; ``xh_ok`` / ``heavy_ok``: share of X-H / heavy-heavy bonds in that range.
    """
    a = _check_samples(graph, samples, "samples")
    bonds, r0 = uff_bond_lengths(graph)
    d = np.linalg.norm(a[:, bonds[:, 0]] - a[:, bonds[:, 1]], axis=-1)  # (k, B)
    ratio = d / r0
    ok = (ratio >= lo) & (ratio <= hi)
    z = graph.atomic_numbers
    xh = (z[bonds[:, 0]] == 1) | (z[bonds[:, 1]] == 1)
    return {
        "bond_mae": float(np.abs(d - r0).mean()),
        "bonds_ok": float(np.all(ok, axis=1).mean()),
        "xh_ok": float(ok[:, xh].mean()) if xh.any() else 1.0,
        "heavy_ok": float(ok[:, ~xh].mean()) if (~xh).any() else 1.0,
    }


def evaluate(
    references: Sequence[MolGraph],
    generated: Sequence[np.ndarray],
    thresholds: Sequence[float] = (0.5,),
    conformers: Sequence[np.ndarray] | None = None,
    *,
    bonds: bool = True,
) -> dict[str, Any]:
    """COV/MAT (mean over molecules) at each threshold plus bond quality.

    bonds: also the UFF bond-length check (`bond_quality`); switch it off for molecules
    with atoms UFF has no bond-stretch parameters for (it raises on them).

    references: one graph per molecule (its positions: the reference conformer unless
    `conformers` gives ``(c, n, 3)`` reference conformers per molecule); generated:
    ``(k, n, 3)`` per molecule (GeoDiff: k = 2c).
    Returns ``{"COV-R@d": ..., "COV-P@d": ..., "MAT-R", "MAT-P", "bond_mae", "bonds_ok",
    "xh_ok", "heavy_ok", "rmsd": list of (c, k) matrices}`` (see `bond_quality`; the
    four bond keys only with `bonds`).
    """
    from shared_core.mol_metrics import coverage_matching

    if len(references) == 0 or len(references) != len(generated):
        raise ValueError(
            f"generated: expected one sample array per reference ({len(references)}), got {len(generated)}"
        )
    if conformers is not None and len(conformers) != len(references):
        raise ValueError(
            f"conformers: expected one array per reference ({len(references)}), got {len(conformers)}"
        )
    refs = [None] * len(references) if conformers is None else list(conformers)
    for i, (r, g) in enumerate(zip(references, generated, strict=True)):
        _check_samples(r, g, f"generated[{i}]")
    rmsds = [rmsd_matrix(r, g, c) for r, g, c in zip(references, generated, refs, strict=True)]
    out: dict[str, Any] = {}
    for d in thresholds:
        per = [coverage_matching(r, float(d)) for r in rmsds]
        out[f"COV-R@{d:g}"] = float(np.mean([p["COV-R"] for p in per]))
        out[f"COV-P@{d:g}"] = float(np.mean([p["COV-P"] for p in per]))
    per = [coverage_matching(r, 0.5) for r in rmsds]
    out["MAT-R"] = float(np.mean([p["MAT-R"] for p in per]))
    out["MAT-P"] = float(np.mean([p["MAT-P"] for p in per]))
    if not isinstance(bonds, bool):
        raise TypeError(f"bonds: expected a bool, got {type(bonds).__name__}")
    if bonds:
        q = [bond_quality(r, g) for r, g in zip(references, generated, strict=True)]
        for key in ("bond_mae", "bonds_ok", "xh_ok", "heavy_ok"):
            out[key] = float(np.mean([x[key] for x in q]))
    out["rmsd"] = rmsds
    return out


RDKIT_MAX_SEED = 2**31 - 1  # RDKit's randomSeed is a signed 32-bit int (-1: unseeded)


def etkdg(graph: MolGraph, num_samples: int, *, seed: int = 0, mmff: bool = False) -> np.ndarray:
    """``(num_samples, n, 3)`` RDKit ETKDGv3 conformers (atom order of `graph`), seeded.

    seed: an int in [0, 2^31 - 2]; RDKit gets ``randomSeed = seed + 1``. RDKit 2026.09.1
    embeds every conformer of a molecule ALIKE with ``randomSeed = 0`` (so msgen <= 0.3.2's
    ``etkdg(g, k, seed=0)`` returned k copies); ``seed + 1`` maps our seeds one to one onto
    RDKit's positive ones (0.4.0; ``seed = s`` now gives what ``randomSeed = s + 1`` gives).
    """
    from rdkit.Chem import rdDistGeom, rdForceFieldHelpers

    if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples < 1:
        raise ValueError(f"num_samples: expected a positive int, got {num_samples!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < RDKIT_MAX_SEED:
        raise ValueError(f"seed: expected an int in [0, {RDKIT_MAX_SEED - 1}], got {seed!r}")
    mol = _mol(MolGraph(graph.atoms, graph.edge_index, graph.bond_types))
    params: Any = rdDistGeom.ETKDGv3()  # RDKit's stubs type its fields wrongly
    params.randomSeed = seed + 1  # randomSeed = 0 embeds identical conformers (docstring)
    params.numThreads = 1
    ids = list(rdDistGeom.EmbedMultipleConfs(mol, numConfs=num_samples, params=params))
    if len(ids) < num_samples:  # rare on QM9: retry from random coordinates
        params.useRandomCoords = True
        ids = list(rdDistGeom.EmbedMultipleConfs(mol, numConfs=num_samples, params=params))
    if len(ids) < num_samples:
        raise ValueError(f"graph: ETKDG embedded {len(ids)} of {num_samples} conformers")
    if mmff:
        rdForceFieldHelpers.MMFFOptimizeMoleculeConfs(mol, numThreads=1)
    return np.stack([mol.GetConformer(i).GetPositions() for i in ids])


def random_conformers(graph: MolGraph, num_samples: int, *, seed: int = 0) -> np.ndarray:
    """``(num_samples, n, 3)`` coordinates from the diffusion prior N(0, I) (Å), centred."""
    x = np.random.default_rng(seed).standard_normal((num_samples, graph.num_atoms, 3))
    return x - x.mean(axis=1, keepdims=True)
