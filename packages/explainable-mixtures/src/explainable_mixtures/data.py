"""Data for the reproduction: planted box rules, QM9 HOMO-LUMO gaps with RDKit descriptors,
scikit-learn's diabetes set, and a CSV reader for the user's own table (UCI layout)."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HARTREE_EV = 27.211386245988  # CODATA 2018
QM9_DESCRIPTORS = (
    "heavy_atoms",
    "rings",
    "aromatic_rings",
    "n_N",
    "n_O",
    "n_F",
    "frac_sp3",
)


@dataclass(frozen=True)
class Table:
    """Descriptive features ``X (n, d)``, targets ``y (n, d_y)``, their names, and (planted
    data only) the true component of each row and the true boxes ``(k, d, 2)``."""

    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    target_names: tuple[str, ...]
    labels: np.ndarray | None = None
    boxes: np.ndarray | None = None
    means: np.ndarray | None = None
    covs: np.ndarray | None = None
    bounds: np.ndarray | None = field(default=None)  # (d, 2) the feature domain when known


def planted_boxes() -> np.ndarray:
    """Four rules over at most two of five features, partitioning ``[0, 1]^5``, ``(4, 5, 2)``."""
    full = np.tile([0.0, 1.0], (4, 5, 1))
    boxes = full.copy()
    boxes[0, 0], boxes[0, 1] = (0.0, 0.5), (0.0, 0.4)  # x0 <= 0.5 AND x1 <= 0.4
    boxes[1, 0], boxes[1, 1] = (0.0, 0.5), (0.4, 1.0)  # x0 <= 0.5 AND x1 >= 0.4
    boxes[2, 0], boxes[2, 2] = (0.5, 1.0), (0.0, 0.6)  # x0 >= 0.5 AND x2 <= 0.6
    boxes[3, 0], boxes[3, 2] = (0.5, 1.0), (0.6, 1.0)  # x0 >= 0.5 AND x2 >= 0.6
    return boxes


def planted(n: int, *, targets: int = 1, seed: int = 0) -> Table:
    """``x ~ U[0, 1]^5``; the box containing ``x`` picks a Gaussian for ``y`` (1-D or 2-D).

    The component means are well apart in units of their spread, so the rules are
    identifiable; the boxes are those of `planted_boxes`.
    """
    if targets not in (1, 2):
        raise ValueError(f"targets: expected 1 or 2, got {targets!r}")
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, (n, 5))
    boxes = planted_boxes()
    inside = np.all(
        (X[:, None, :] >= boxes[None, :, :, 0]) & (X[:, None, :] <= boxes[None, :, :, 1]), -1
    )
    labels = inside.argmax(1)
    if targets == 1:
        means = np.array([[-3.0], [0.0], [3.0], [6.0]])
        covs = np.array([[[0.5**2]], [[0.8**2]], [[0.6**2]], [[0.4**2]]])
    else:
        means = np.array([[-3.0, 0.0], [0.0, 3.0], [3.0, 0.0], [0.0, -3.0]])
        covs = np.array(
            [
                [[0.5, 0.2], [0.2, 0.5]],
                [[0.6, -0.1], [-0.1, 0.3]],
                [[0.4, 0.0], [0.0, 0.4]],
                [[0.3, 0.1], [0.1, 0.6]],
            ]
        )
    y = np.stack([rng.multivariate_normal(means[c], covs[c]) for c in labels])
    return Table(
        X,
        y,
        tuple(f"x{j}" for j in range(5)),
        tuple(f"y{j}" for j in range(targets)),
        labels,
        boxes,
        means,
        covs,
        np.tile([0.0, 1.0], (5, 1)),
    )


def qm9_gap(n: int, *, seed: int = 0) -> Table:
    """HOMO-LUMO gap (eV) of `n` random QM9 molecules with seven RDKit descriptors.

    Needs the ``data`` extra (qm9pack through shared-core, and RDKit).
    """
    from shared_core.data import load, require_extra

    require_extra("explainable-mixtures", "data", "rdkit", "the QM9 experiment")
    require_extra("explainable-mixtures", "data", "qm9pack", "the QM9 experiment")
    from rdkit import Chem, RDLogger
    from rdkit.Chem import rdMolDescriptors

    from shared_core.data import QM9_PROPERTIES

    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]
    smiles, targets = load("qm9-smiles")
    gap = targets[:, QM9_PROPERTIES.index("gap")] * HARTREE_EV
    rng = np.random.default_rng(seed)
    rows, ys = [], []
    for i in rng.permutation(len(smiles)):
        mol = Chem.MolFromSmiles(smiles[i])
        if mol is None:
            continue
        counts = {s: 0 for s in ("N", "O", "F")}
        for atom in mol.GetAtoms():
            if atom.GetSymbol() in counts:
                counts[atom.GetSymbol()] += 1
        rows.append(
            [
                mol.GetNumHeavyAtoms(),
                rdMolDescriptors.CalcNumRings(mol),
                rdMolDescriptors.CalcNumAromaticRings(mol),
                counts["N"],
                counts["O"],
                counts["F"],
                rdMolDescriptors.CalcFractionCSP3(mol),
            ]
        )
        ys.append(gap[i])
        if len(rows) == n:
            break
    return Table(
        np.array(rows, dtype=np.float64), np.array(ys)[:, None], QM9_DESCRIPTORS, ("gap_eV",)
    )


def diabetes() -> Table:
    """scikit-learn's diabetes set: ten baseline variables, disease progression after a year."""
    from sklearn.datasets import load_diabetes

    d = load_diabetes()
    return Table(d.data, d.target[:, None], tuple(d.feature_names), ("progression",))


def read_csv(path: str | Path, features: list[str] | None, targets: list[str]) -> Table:
    """A numeric CSV with a header row: `targets` columns as y, `features` (default: all the
    others) as X. Raises FileNotFoundError / ValueError naming the file, column and row."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file {str(path)!r}")
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise ValueError(f"path: {str(path)!r} is empty, expected a header row") from None
        body = list(reader)
    missing = [c for c in targets if c not in header]
    if not targets or missing:
        raise ValueError(f"targets: expected column names among {header}, got {targets!r}")
    features = features or [c for c in header if c not in targets]
    missing = [c for c in features if c not in header]
    if missing:
        raise ValueError(f"features: columns {missing} are not in {str(path)!r} ({header})")
    if not body:
        raise ValueError(f"path: {str(path)!r} has a header but no rows")

    def column(name: str) -> np.ndarray:
        j = header.index(name)
        out = np.empty(len(body))
        for r, row in enumerate(body):
            try:
                out[r] = float(row[j])
            except (ValueError, IndexError):
                cell = row[j] if j < len(row) else "<missing>"
                raise ValueError(
                    f"path: {str(path)!r} row {r + 2} column {name!r}: expected a number, got {cell!r}"
                ) from None
        return out

    X = np.stack([column(c) for c in features], axis=1)
    y = np.stack([column(c) for c in targets], axis=1)
    return Table(X, y, tuple(features), tuple(targets))


def split(table: Table, test: float, seed: int) -> tuple[Table, Table]:
    """A random train/test split of the rows (labels and truths carried along)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(table.X))
    cut = round(len(order) * (1 - test))

    def take(idx: np.ndarray) -> Table:
        extra: dict[str, Any] = {}
        if table.labels is not None:
            extra["labels"] = table.labels[idx]
        return Table(
            table.X[idx],
            table.y[idx],
            table.feature_names,
            table.target_names,
            boxes=table.boxes,
            means=table.means,
            covs=table.covs,
            bounds=table.bounds,
            **extra,
        )

    return take(order[:cut]), take(order[cut:])
