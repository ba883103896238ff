import numpy as np
import pytest
import torch
from meld_diffusion.data import (
    decode,
    encode,
    pair_index,
    qm9_graphs,
    relayout,
    seq_len,
    small_qm9_graphs,
    valid_positions,
)

from shared_core import mol_metrics as mm
from shared_core.data import MolGraph, mol_graph


def test_layout_sizes():
    assert seq_len(9) == 9 + 36
    i, j = pair_index(4)
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == [
        (0, 1),
        (0, 2),
        (0, 3),
        (1, 2),
        (1, 3),
        (2, 3),
    ]
    v = valid_positions(torch.tensor([2, 4]), 4)
    assert v.sum(1).tolist() == [2 + 1, 4 + 6]


def test_round_trip_gives_the_canonical_smiles(qm9_rows):
    rows, counts, smiles = qm9_rows
    back = mm.canonical_smiles(decode(rows, counts, 6))
    assert back == mm.canonical_smiles(smiles)


def test_qm9_subset_round_trips():
    data = qm9_graphs(limit=60, seed=3, pool=3000)
    assert len(data) > 50 and data.rows.shape == (len(data), seq_len(9))
    assert mm.canonical_smiles(decode(data.rows, data.n_atoms, 9)) == mm.canonical_smiles(
        list(data.smiles)
    )
    p = data.atom_count_probs()
    assert p.shape == (10,) and abs(p.sum() - 1) < 1e-12


def _star(center_bonds: int) -> tuple[np.ndarray, np.ndarray]:
    n = center_bonds + 1
    row = np.zeros(seq_len(6), dtype=np.int64)
    for k, (a, b) in enumerate(zip(*pair_index(6), strict=True)):
        if a == 0 and 1 <= b < n:
            row[6 + k] = 1
    return row[None], np.array([n])


def test_impossible_valence_is_invalid_without_correction():
    ok = decode(*_star(4), 6)  # neopentane: C bonded to 4 C
    bad = decode(*_star(5), 6)  # a carbon with 5 single bonds
    assert mm.validity(ok) == 1.0
    assert mm.validity(bad) == 0.0


def test_relayout_keeps_positions_in_order(qm9_rows):
    rows, counts, _ = qm9_rows
    four = rows[counts == 4].numpy()
    small = np.concatenate(
        [
            four[:, :4],
            four[:, 6:][
                :, [k for k, (a, b) in enumerate(zip(*pair_index(6), strict=True)) if b < 4]
            ],
        ],
        1,
    )
    big = relayout(small, 4, 9)
    valid = valid_positions(torch.full((len(big),), 4), 9).numpy()
    assert np.array_equal(big[valid].reshape(len(big), -1), small)


def test_small_qm9_graphs_are_all_48_molecules():
    small = small_qm9_graphs(4)
    assert {n: len(r) for n, r in small.items()} == {1: 3, 2: 5, 3: 9, 4: 31}


def test_encode_rejects_what_the_vocabulary_cannot_hold():
    with pytest.raises(ValueError, match="charge"):
        encode([mol_graph("C[NH3+]", kekulize=True)], 6)
    with pytest.raises(ValueError, match="aromatic bond"):
        encode([mol_graph("c1ccccc1")], 6)
    with pytest.raises(ValueError, match="max_atoms=3"):
        encode([mol_graph("CCCC", kekulize=True)], 3)
    with pytest.raises(ValueError, match="Z=16"):
        encode([mol_graph("CS", kekulize=True)], 6)
    with pytest.raises(TypeError, match="expected a MolGraph"):
        encode(["CC"], 6)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="max_atoms: expected an int >= 1"):
        encode([], 0)


def test_decode_rejects_masks_and_bad_shapes():
    with pytest.raises(ValueError, match="no mask left"):
        decode(np.full((1, seq_len(3)), 4), np.array([3]), 3)
    with pytest.raises(ValueError, match="rows, n_atoms"):
        decode(np.zeros((1, 5)), np.array([3]), 3)
    assert isinstance(
        decode(np.zeros((1, seq_len(3)), dtype=np.int64), np.array([1]), 3)[0], MolGraph
    )


def test_qm9_graphs_argument_errors():
    with pytest.raises(ValueError, match="limit"):
        qm9_graphs(limit=0, pool=10)
    with pytest.raises(ValueError, match="pool"):
        qm9_graphs(limit=5, pool=0)
    with pytest.raises(ValueError, match="to_atoms"):
        relayout(np.zeros((1, seq_len(4)), dtype=np.int64), 4, 3)
