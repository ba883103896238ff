from __future__ import annotations

import math

import pytest
import torch
from edt_former.atoms import AtomVocab
from edt_former.entropy_model import (
    EntropyModelConfig,
    atom_entropies,
    build_entropy_model,
    encode_batch,
    entropy_bits,
    next_token_loss,
    train_entropy_model,
)
from edt_former.reference import atom_entropies_reference

from shared_core.testing import assert_close

SMILES = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(Cl)cc1", "N#CC[N+](C)(C)C"]


@pytest.fixture
def model() -> object:
    torch.manual_seed(0)
    m = build_entropy_model(AtomVocab())
    # sharpen the random model so entropies differ clearly between positions
    with torch.no_grad():
        m.lm_head.weight.mul_(3.0)
    return m.eval()


def test_official_architecture() -> None:
    m = build_entropy_model(AtomVocab())
    c = m.config
    assert (c.n_layer, c.n_head, c.n_embd, c.n_positions) == (2, 2, 128, 512)
    assert c.vocab_size == len(AtomVocab())


def test_batched_entropy_equals_prefix_reference(model: object) -> None:
    vocab = AtomVocab()
    e, mask = atom_entropies(model, vocab, SMILES)
    for i, s in enumerate(SMILES):
        ref = atom_entropies_reference(model, vocab, s)
        n = int(mask[i].sum())
        assert n == len(ref)
        assert_close(f"entropy[{s}]", ref, e[i, :n], 1e-5)


def test_atom_k_gets_the_prediction_after_reading_it(model: object) -> None:
    """Which is which: atom k's value is H(next | bos, a_0..a_k), not H(a_k | bos, ..a_{k-1})."""
    vocab = AtomVocab()
    s = "CC(=O)Nc1ccc(Cl)cc1"
    ids, _ = encode_batch([s], vocab)
    with torch.no_grad():
        per_position = entropy_bits(model(input_ids=ids).logits[0])  # prediction made at t
    e, mask = atom_entropies(model, vocab, [s])
    n = int(mask.sum())
    assert torch.allclose(e[0, :n], per_position[1 : n + 1], atol=1e-6)  # the code's e[1:]
    assert not torch.allclose(e[0, :n], per_position[:n], atol=1e-3)  # the comment's reading


def test_entropy_bits_of_uniform() -> None:
    assert entropy_bits(torch.zeros(8)).item() == pytest.approx(3.0)
    assert entropy_bits(torch.tensor([0.0, -1e4])).item() == pytest.approx(0.0, abs=1e-6)
    assert math.isfinite(entropy_bits(torch.tensor([1e4, 0.0])).item())


def test_encode_batch_and_errors() -> None:
    vocab = AtomVocab()
    ids, mask = encode_batch(["CO", "CCC"], vocab)
    assert ids.tolist()[0] == [vocab.bos, vocab.id("C"), vocab.id("O"), vocab.eos, vocab.pad]
    assert mask.sum(1).tolist() == [4, 5]
    with pytest.raises(ValueError, match="non-empty list"):
        encode_batch([], vocab)
    with pytest.raises(ValueError, match="positions"):
        encode_batch(["C" * 20], vocab, max_len=10)


def test_training_through_fit_lowers_loss_and_freezes() -> None:
    vocab = AtomVocab()
    data = ["CCO", "CCN", "CCC", "CCF"] * 8
    small = EntropyModelConfig(n_embd=32, n_positions=16)
    torch.manual_seed(0)
    ids, mask = encode_batch(data, vocab)
    before = next_token_loss(build_entropy_model(vocab, small), {"ids": ids, "mask": mask}).item()
    m = train_entropy_model(data, vocab, steps=150, batch_size=16, lr=3e-3, config=small)
    after = next_token_loss(m, {"ids": ids, "mask": mask}).item()
    assert after < 0.5 * before
    assert not any(p.requires_grad for p in m.parameters())
    # after "CC" the next atom is uncertain (O/N/C/F: 2 bits); after atoms 0 and 2 it is sure
    e, _ = atom_entropies(m, vocab, ["CCO"])
    assert e[0, 1] > 1.5 and e[0, 0] < 0.5 and e[0, 2] < 0.5
    with pytest.raises(ValueError, match="at least one"):
        train_entropy_model([], vocab, steps=1)


_BAD_ENTROPY_INPUTS = {
    "unclosed ring (invalid SMILES)": (["CCO", "C1CC"], ValueError, "smiles[1]", "C1CC"),
    "a bare string": ("CCO", TypeError, "smiles"),
    "an empty SMILES": ([""], ValueError, "smiles[0]"),
    "not a string": ([3], TypeError, "smiles[0]"),
}


@pytest.mark.parametrize("case", _BAD_ENTROPY_INPUTS)
def test_atom_entropies_rejects_what_parse_smiles_rejects(model: object, case: str) -> None:
    """Issue 46: atom_entropies("C1CC") gave entropies for a SMILES parse_smiles rejects."""
    from shared_core.testing import assert_bad_input

    smiles, error, argument, *value = _BAD_ENTROPY_INPUTS[case]
    assert_bad_input(lambda: atom_entropies(model, AtomVocab(), smiles), error, argument, *value)
