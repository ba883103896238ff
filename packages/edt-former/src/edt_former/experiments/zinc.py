"""ZINC substructure questions: molecules large enough for patching to matter.

QM9 molecules have ~9 heavy atoms, ~1.6 BRICS fragments and ~2 entropy patches, so a few
static queries already see everything. The MOSES ZINC "clean leads" test split (``molsets``
wheel, read through ``shared_core.data.load("zinc-smiles", split="test")``; disjoint from
the ZINC training SMILES of the entropy model) has ~21 heavy atoms, ~4.6 BRICS fragments
and ~3 entropy patches per molecule. The question depends on one substructure: "does this
molecule contain an amide group" (RDKit ``Fragments.fr_amide`` > 0; also ester, ether,
halogen), so a query token that pools the right patch can carry the answer.
"""

from __future__ import annotations

import numpy as np

from edt_former.atoms import parse_smiles
from edt_former.data import QASet

ZINC_QUESTIONS: dict[str, str] = {
    "amide": "fr_amide",
    "ester": "fr_ester",
    "ether": "fr_ether",
    "halogen": "fr_halogen",
}
"""Question type -> the RDKit ``Chem.Fragments`` function that counts its group."""


def group_count(smiles: str, question: str) -> int:
    """How many times the question's functional group occurs in `smiles` (RDKit fragments)."""
    from rdkit.Chem import Fragments

    if question not in ZINC_QUESTIONS:
        raise ValueError(f"question: expected one of {sorted(ZINC_QUESTIONS)}, got {question!r}")
    return int(getattr(Fragments, ZINC_QUESTIONS[question])(parse_smiles(smiles)))


def zinc_qa(n: int, question: str = "amide", seed: int = 0, test_fraction: float = 0.2) -> QASet:
    """`n` ZINC test-split molecules asked "does it contain <group>" (yes = count > 0)."""
    from shared_core.data import load, require_extra, split_indices

    if question not in ZINC_QUESTIONS:
        raise ValueError(f"question: expected one of {sorted(ZINC_QUESTIONS)}, got {question!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 10:
        raise ValueError(f"n: expected an int >= 10 (molecules), got {n!r}")
    require_extra("edt-former", "data", "moses", "the ZINC questions", "molsets==0.3.1")
    smiles = list(load("zinc-smiles", split="test", limit=n))
    counts = np.asarray([group_count(s, question) for s in smiles], dtype=float)
    train, test = split_indices(len(smiles), (1.0 - test_fraction, test_fraction), seed=seed)
    return QASet(smiles, {question: counts}, train, test, thresholds={question: 0.0})
