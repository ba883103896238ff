"""ZINC substructure questions: molecules large enough for patching to matter.

QM9 molecules have ~9 heavy atoms, ~1.6 BRICS fragments and ~2 entropy patches, so a few
static queries already see everything. The MOSES ZINC "clean leads" test split (``molsets``
wheel, read through ``shared_core.data.load("zinc-smiles", split="test")``; disjoint from
the ZINC training SMILES of the entropy model) has ~21 heavy atoms, ~4.6 BRICS fragments
and ~3 entropy patches per molecule. The question depends on one substructure: "does this
molecule contain an amide group" (RDKit ``Fragments.fr_amide`` > 0; also ester, ether,
halogen), so a query token that pools the right patch can carry the answer. Every arm
answers the amide question at 0.95-0.98, so it cannot show whether patching matters;
"aromatic_rings" ("does this molecule have more aromatic rings than the median") asks for
a count instead.
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
    "aromatic_rings": "CalcNumAromaticRings",
}
"""Question type -> the RDKit function (``Chem.Fragments``, else ``Chem.rdMolDescriptors``)
that counts its group."""

MEDIAN_QUESTIONS = ("aromatic_rings",)
"""Counting questions: yes = a count above the median of the training molecules (the QM9
questions' rule), not "contains one". Presence of an amide is at ceiling for every arm
(0.95-0.98); "more aromatic rings than the median" (2 on ZINC, 30 % above) needs the rings
counted, which averaging static queries cannot do and one token per patch might."""


def group_count(smiles: str, question: str) -> int:
    """How many times the question's group occurs in `smiles` (RDKit fragments / descriptors)."""
    from rdkit.Chem import Fragments, rdMolDescriptors

    if question not in ZINC_QUESTIONS:
        raise ValueError(f"question: expected one of {sorted(ZINC_QUESTIONS)}, got {question!r}")
    name = ZINC_QUESTIONS[question]
    count = getattr(Fragments, name, None) or getattr(rdMolDescriptors, name)
    return int(count(parse_smiles(smiles)))


def zinc_qa(n: int, question: str = "amide", seed: int = 0, test_fraction: float = 0.2) -> QASet:
    """`n` ZINC test-split molecules asked "does it contain <group>" (yes = count > 0), or for
    a `MEDIAN_QUESTIONS` one "more <group>s than the median" (median of the training rows)."""
    from shared_core.data import load, require_extra, split_indices

    if question not in ZINC_QUESTIONS:
        raise ValueError(f"question: expected one of {sorted(ZINC_QUESTIONS)}, got {question!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 10:
        raise ValueError(f"n: expected an int >= 10 (molecules), got {n!r}")
    require_extra("edt-former", "data", "moses", "the ZINC questions", "molsets==0.3.1")
    smiles = list(load("zinc-smiles", split="test", limit=n))
    counts = np.asarray([group_count(s, question) for s in smiles], dtype=float)
    train, test = split_indices(len(smiles), (1.0 - test_fraction, test_fraction), seed=seed)
    threshold = float(np.median(counts[train])) if question in MEDIAN_QUESTIONS else 0.0
    return QASet(smiles, {question: counts}, train, test, thresholds={question: threshold})
