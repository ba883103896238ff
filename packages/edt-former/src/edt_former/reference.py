"""Slow, literal implementations: the oracles of the tests.

- `atom_entropies_reference`: the entropy of atom ``k`` recomputed from the prefix
  ``[<bos>, atom_0..atom_k]`` alone (one forward pass per atom), so no off-by-one in the
  batched slicing of `edt_former.entropy_model.atom_entropies` can go unnoticed.
- `entropy_group_ids_reference`: the official loop of ``group_ids_by_entropy`` (one atom at a
  time, ``torch.quantile`` threshold, increment after a rising edge).
- `peak_group_ids_reference`: the paper's peak rule through ``scipy.signal.find_peaks``
  (local maxima, ``distance = Delta``, ``prominence = gamma``), one molecule at a time.
- `pool_groups_reference`: a Python loop over groups (mean of member rows).
- `upstream_tokenize_atoms`: the official regex tokeniser, kept to show where it differs.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from edt_former.atoms import AtomVocab, tokenize_atoms
from edt_former.entropy_model import entropy_bits

UPSTREAM_ATOM_REGEX = re.compile(
    r"Cl|Br|Si|Se|Na|Ca|Li|Mg|Al|Zn|Cu|Mn|Fe|Co|Ni|Ag|Au|Pt|Pd|Hg|Sn|Sb|Te|Xe|Kr|He|Ne|Ar|"
    r"[cnospb]|[BCNOFPSI]"
)


def upstream_tokenize_atoms(smiles: str) -> list[str]:
    """The official ``runner/entropy_model/tokenizer.py::tokenize_atoms`` (bracket-blind)."""
    out = []
    for t in UPSTREAM_ATOM_REGEX.findall(smiles):
        out.append(t.upper() if len(t) == 1 else t[0].upper() + t[1:].lower())
    return out


@torch.no_grad()
def atom_entropies_reference(model: Any, vocab: AtomVocab, smiles: str) -> torch.Tensor:
    """``(atoms,)`` bits: atom k's value is the entropy after reading ``<bos>, atom_0..atom_k``."""
    model.eval()
    atoms = [vocab.id(a) for a in tokenize_atoms(smiles)]
    out = []
    for k in range(len(atoms)):
        prefix = torch.tensor([[vocab.bos, *atoms[: k + 1]]])
        logits = model(input_ids=prefix).logits[0, -1]
        out.append(entropy_bits(logits))
    return torch.stack(out)


def entropy_group_ids_reference(entropy: torch.Tensor, q: float = 0.75) -> list[int]:
    """The official loop: threshold = quantile(e, q); ids change after each rising edge."""
    thr = torch.quantile(entropy.double(), q)
    gid, prev_high, ids = 0, False, []
    for v in entropy.double():
        high = bool(v > thr)
        ids.append(gid)
        if high and not prev_high:
            gid += 1
        prev_high = high
    return ids


def peak_group_ids_reference(entropy: torch.Tensor, delta: int, gamma: float) -> list[int]:
    """Peak rule via ``scipy.signal.find_peaks``; ids change after each kept peak."""
    from scipy.signal import find_peaks

    peaks, _ = find_peaks(entropy.double().cpu().numpy(), distance=delta, prominence=gamma)
    cut = set(peaks.tolist())
    gid, ids = 0, []
    for k in range(len(entropy)):
        ids.append(gid)
        gid += k in cut
    return ids


def pool_groups_reference(x: torch.Tensor, ids: list[int]) -> torch.Tensor:
    """``(groups, dim)``: row g is the mean of the rows of `x` whose id is g."""
    n_groups = max(ids) + 1
    rows = []
    for g in range(n_groups):
        members = [x[i] for i, j in enumerate(ids) if j == g]
        rows.append(torch.stack(members).mean(0))
    return torch.stack(rows)
