"""Sample quality of generated molecular graphs: the paper's metrics and a few diagnostics.

The paper's (its tables: validity, FCD, NSPDK, scaffold similarity; uniqueness, novelty):

- validity: RDKit ``SanitizeMol`` on the raw decoded graph (`shared_core.mol_metrics`), no
  valence fix, no largest-fragment pick; ``connected`` additionally needs one fragment;
- uniqueness and novelty (MOSES definitions, `shared_core.mol_metrics`);
- ``fcd``: the ChemNet Fréchet distance (``fcd_torch``, extra ``fcd``) of the valid samples'
  canonical SMILES to the reference (held-out) molecules;
- ``nspdk``: NSPDK MMD to the reference molecules, ``scaffold``: MOSES scaffold similarity
  (`meld_diffusion.graph_metrics`).

Diagnostics of ours:

- atom-type and bond-type histogram distances (total variation, 0..1) to the training graphs;
  the bond histogram is over atom pairs of existing atoms, "no bond" included;
- a descriptor Fréchet distance: the Fréchet distance between Gaussians fitted to 10 RDKit
  descriptors (`DESCRIPTORS`) of valid samples and of reference molecules, each descriptor
  standardised by the reference set's mean and standard deviation (so BertzCT's scale does not
  swamp the rest). It is NOT the FCD (no ChemNet).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import numpy as np

from meld_diffusion.data import ATOM_TYPES, VOCAB_SIZE, decode, pair_index, vocab_size

DESCRIPTORS = (
    "MolWt",
    "MolLogP",
    "TPSA",
    "NumHDonors",
    "NumHAcceptors",
    "NumRotatableBonds",
    "RingCount",
    "FractionCSP3",
    "NumAliphaticRings",
    "BertzCT",
)


def type_histograms(
    rows: np.ndarray, n_atoms: np.ndarray, max_atoms: int, vocab: int = VOCAB_SIZE
) -> tuple[np.ndarray, np.ndarray]:
    """Atom-type and bond-type frequencies (vocab,) over existing atoms and atom pairs."""
    rows, n_atoms = np.asarray(rows), np.asarray(n_atoms)
    atoms = rows[:, :max_atoms][np.arange(max_atoms)[None] < n_atoms[:, None]]
    _, pj = pair_index(max_atoms)
    bonds = rows[:, max_atoms:][pj[None] < n_atoms[:, None]]
    a = np.bincount(atoms, minlength=vocab) / max(1, atoms.size)
    b = np.bincount(bonds, minlength=vocab) / max(1, bonds.size)
    return a, b


def descriptor_features(smiles: Sequence[str]) -> np.ndarray:
    """(n, 10) RDKit descriptors (`DESCRIPTORS`) of valid SMILES."""
    from rdkit import Chem
    from rdkit.Chem import Descriptors

    fns = [getattr(Descriptors, name) for name in DESCRIPTORS]
    out = []
    for s in smiles:
        mol = Chem.MolFromSmiles(s)
        if mol is None:
            raise ValueError(f"smiles: {s!r} is not a valid molecule")
        out.append([float(f(mol)) for f in fns])
    return np.asarray(out, dtype=np.float64).reshape(-1, len(DESCRIPTORS))


def fcd_available() -> bool:
    """Whether ``fcd_torch`` (the ChemNet FCD, extra ``fcd``) can be imported."""
    return importlib.util.find_spec("fcd_torch") is not None


def _pairs(name: str, rows: object, counts: object) -> None:
    if (rows is None) != (counts is None):
        raise ValueError(
            f"{name}: expected train_rows and train_counts together (or neither), got one of them"
        )


def smiles_metrics(
    samples: Sequence[str | None],
    *,
    train_smiles: Sequence[str] | None = None,
    reference_smiles: Sequence[str] | None = None,
    fcd: bool | None = None,
) -> dict[str, Any]:
    """The paper's metrics of generated molecules given as SMILES (None or "" = invalid graph).

    ``validity`` (RDKit sanitisation, no correction; over all samples), ``connected``,
    ``uniqueness``; ``novelty`` against `train_smiles`; ``desc_fd``, ``nspdk``, ``scaffold``
    and ``fcd`` against `reference_smiles` (`fcd` as in `sample_metrics`).
    """
    from meld_diffusion.graph_metrics import nspdk_mmd, scaffold_similarity
    from shared_core import mol_metrics as mm
    from shared_core.metrics import frechet_distance

    if fcd is not None and not isinstance(fcd, bool):
        raise TypeError(f"fcd: expected True, False or None, got {fcd!r}")
    if fcd and not fcd_available():
        raise ValueError("fcd: True needs fcd_torch (pip install 'meld-diffusion[fcd]')")
    if fcd and reference_smiles is None:
        raise ValueError("fcd: True needs reference_smiles")
    if not samples:
        raise ValueError("samples: expected at least one generated molecule, got 0")
    given = [s for s in samples if s]
    canon = iter(mm.canonical_smiles(given, "samples") if given else [])
    valid = [c for s in samples if s and (c := next(canon)) is not None]
    out: dict[str, Any] = {
        "samples": len(samples),
        "validity": len(valid) / len(samples),
        "connected": sum(1 for s in valid if "." not in s) / len(samples),
    }
    out["uniqueness"] = mm.uniqueness(valid) if valid else 0.0
    if train_smiles is not None:
        out["novelty"] = mm.novelty(valid, list(train_smiles)) if valid else 0.0
    if reference_smiles is None:
        return out
    ref = descriptor_features(list(reference_smiles))
    mu, sd = ref.mean(0), ref.std(0) + 1e-8
    out["desc_fd"] = (
        frechet_distance((descriptor_features(valid) - mu) / sd, (ref - mu) / sd)
        if len(valid) >= 2
        else float("nan")
    )
    out["nspdk"] = nspdk_mmd(valid, list(reference_smiles)) if valid else float("nan")
    out["scaffold"] = scaffold_similarity(valid, list(reference_smiles)) if valid else 0.0
    if (fcd_available() if fcd is None else fcd) and len(valid) >= 2:
        from fcd_torch import FCD

        out["fcd"] = float(FCD(device="cpu", n_jobs=1)(valid, list(reference_smiles)))
    return out


def sample_metrics(
    rows: np.ndarray,
    n_atoms: np.ndarray,
    max_atoms: int,
    *,
    train_smiles: Sequence[str] | None = None,
    train_rows: np.ndarray | None = None,
    train_counts: np.ndarray | None = None,
    reference_smiles: Sequence[str] | None = None,
    fcd: bool | None = None,
    atom_types: Sequence[str] = ATOM_TYPES,
) -> dict[str, Any]:
    """The sample metrics of generated rows (see the module docstring) that the inputs allow.

    Validity, connectedness and uniqueness need the samples only; ``novelty`` needs
    `train_smiles`; ``atom_tv`` / ``bond_tv`` need `train_rows` and `train_counts`;
    ``desc_fd``, ``nspdk``, ``scaffold`` and ``fcd`` need `reference_smiles`. `fcd`: True
    computes the ChemNet FCD (ValueError when ``fcd_torch`` is missing), False skips it, None
    (default) computes it when ``fcd_torch`` is installed (`smiles_metrics`).
    """
    from shared_core import mol_metrics as mm

    _pairs("train_rows", train_rows, train_counts)
    graphs = decode(rows, n_atoms, max_atoms, atom_types)
    if not graphs:
        raise ValueError("rows: expected at least one generated row, got 0")
    out = smiles_metrics(
        mm.canonical_smiles(graphs),
        train_smiles=train_smiles,
        reference_smiles=reference_smiles,
        fcd=fcd,
    )
    del out["samples"]
    if train_rows is not None and train_counts is not None:
        V = vocab_size(len(atom_types))
        ga, gb = type_histograms(rows, n_atoms, max_atoms, V)
        ta, tb = type_histograms(train_rows, train_counts, max_atoms, V)
        out["atom_tv"] = 0.5 * float(np.abs(ga - ta).sum())
        out["bond_tv"] = 0.5 * float(np.abs(gb - tb).sum())
    return out
