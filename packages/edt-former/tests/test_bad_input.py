"""Bad input to the public API, in one table: each case raises a ValueError/TypeError naming
the argument (issue 46's probe: `atom_entropies` gave entropies for "C1CC", an invalid SMILES
that `parse_smiles` rejects)."""

from __future__ import annotations

import pytest
import torch
from edt_former import (
    AtomVocab,
    atom_entropies,
    brics_group_ids,
    build_entropy_model,
    entropy_group_ids,
    local_tokens,
    parse_smiles,
    peak_group_ids,
    pool_groups,
    tokenize_atoms,
    train_entropy_model,
)
from edt_former.entropy_model import EntropyModelConfig

from shared_core.testing import assert_bad_input

torch.manual_seed(0)
_VOCAB = AtomVocab()
_MODEL = build_entropy_model(_VOCAB, EntropyModelConfig(n_embd=16, n_positions=64)).eval()
_E = torch.rand(2, 6)
_NAN_E = _E.clone()
_NAN_E[0, 2] = float("nan")
_NODES = torch.randn(2, 6, 4)
_IDS = torch.tensor([[0, 0, 1, 1, 2, 2], [0, 1, 1, 2, 2, 2]])

CASES = {
    # SMILES
    "invalid SMILES to atom_entropies": (
        lambda: atom_entropies(_MODEL, _VOCAB, ["CCO", "C1CC"]),
        ValueError,
        "smiles[1]",
        "C1CC",
    ),
    "a bare string to atom_entropies": (
        lambda: atom_entropies(_MODEL, _VOCAB, "CCO"),
        TypeError,
        "smiles",
    ),
    "an empty SMILES to atom_entropies": (
        lambda: atom_entropies(_MODEL, _VOCAB, [""]),
        ValueError,
        "smiles[0]",
    ),
    "a number to atom_entropies": (
        lambda: atom_entropies(_MODEL, _VOCAB, [3]),
        TypeError,
        "smiles[0]",
    ),
    "invalid SMILES to parse_smiles": (lambda: parse_smiles("C1CC"), ValueError, "smiles", "C1CC"),
    "empty SMILES to parse_smiles": (lambda: parse_smiles(""), ValueError, "smiles"),
    "a number to parse_smiles": (lambda: parse_smiles(3), TypeError, "smiles"),
    "a number to tokenize_atoms": (lambda: tokenize_atoms(3), TypeError, "smiles"),
    "invalid SMILES to brics": (lambda: brics_group_ids("C1CC"), ValueError, "smiles"),
    "train on no SMILES": (lambda: train_entropy_model([], _VOCAB, steps=1), ValueError, "smiles"),
    # entropy patching
    "NaN entropy (percentile rule)": (lambda: entropy_group_ids(_NAN_E), ValueError, "entropy"),
    "NaN entropy (peak rule)": (lambda: peak_group_ids(_NAN_E), ValueError, "entropy"),
    "1-D entropy": (lambda: entropy_group_ids(torch.rand(6)), ValueError, "entropy"),
    "integer entropy": (
        lambda: entropy_group_ids(torch.ones(2, 6, dtype=torch.long)),
        TypeError,
        "entropy",
    ),
    "quantile above 1": (lambda: entropy_group_ids(_E, q=1.5), ValueError, "q"),
    "mask of another shape": (
        lambda: entropy_group_ids(_E, mask=torch.ones(2, 5, dtype=torch.bool)),
        ValueError,
        "mask",
    ),
    "zero peak gap": (lambda: peak_group_ids(_E, delta=0), ValueError, "delta"),
    "negative prominence": (lambda: peak_group_ids(_E, gamma=-1.0), ValueError, "gamma"),
    # pooling
    "NaN nodes": (lambda: pool_groups(_NODES * float("nan"), _IDS), ValueError, "nodes"),
    "float group ids": (lambda: pool_groups(_NODES, _IDS.float()), TypeError, "group_ids"),
    "negative group id": (lambda: pool_groups(_NODES, _IDS - 3), ValueError, "group_ids"),
    "group ids of another shape": (
        lambda: pool_groups(_NODES, _IDS[:, :5]),
        ValueError,
        "group_ids",
    ),
    "negative token budget": (lambda: local_tokens(_NODES, _IDS, _IDS, -1), ValueError, "budget"),
    "float token budget": (lambda: local_tokens(_NODES, _IDS, _IDS, 2.5), ValueError, "budget"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])
