"""The peak rule's defaults are the reported arms' (one source), and the paper note's
surprisal signal ``e_t = -log p_t`` beside the code's entropy."""

from __future__ import annotations

import inspect
import math

import pytest
import torch
from edt_former.atoms import AtomVocab, tokenize_atoms
from edt_former.entropy_model import atom_entropies, build_entropy_model
from edt_former.experiments.qa import SCALES, Config
from edt_former.patching import PEAK_DELTA, PEAK_GAMMA, peak_group_ids


def test_peak_defaults_are_the_documented_choice_the_reported_arms_use():
    params = inspect.signature(peak_group_ids).parameters
    assert (params["delta"].default, params["gamma"].default) == (3, 0.02)  # README's sweep
    assert (PEAK_DELTA, PEAK_GAMMA) == (3, 0.02)
    for name, c in {"default": Config(), **SCALES}.items():
        assert (c.peak_delta, c.peak_gamma) == (PEAK_DELTA, PEAK_GAMMA), name


def _surprisal_by_prefix(model, vocab: AtomVocab, smiles: str) -> torch.Tensor:
    """Atom k: -log2 p(token after atom k | <bos>, atom_0..atom_k), the last one <eos>."""
    ids = [vocab.id(a) for a in tokenize_atoms(smiles)]
    nxt = [*ids[1:], vocab.eos]
    out = []
    for k in range(len(ids)):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([[vocab.bos, *ids[: k + 1]]])).logits[0, -1]
        out.append(-torch.log_softmax(logits.double(), -1)[nxt[k]] / math.log(2.0))
    return torch.stack(out)


def test_surprisal_is_minus_log_p_of_the_actual_next_atom():
    torch.manual_seed(0)
    vocab = AtomVocab()
    model = build_entropy_model(vocab).eval()
    smiles = ["CCO", "CC(=O)Nc1ccc(Cl)cc1"]
    e, mask = atom_entropies(model, vocab, smiles, signal="surprisal")
    h, _ = atom_entropies(model, vocab, smiles)  # default: the code's entropy
    assert h.equal(atom_entropies(model, vocab, smiles, signal="entropy")[0])
    for i, s in enumerate(smiles):
        n = int(mask[i].sum())
        ref = _surprisal_by_prefix(model, vocab, s)
        torch.testing.assert_close(e[i, :n].double(), ref, rtol=1e-5, atol=1e-5)
        assert not torch.allclose(e[i, :n], h[i, :n])
    with pytest.raises(ValueError, match=r"signal.*'entropy'.*'surprisal'.*'nll'"):
        atom_entropies(model, vocab, smiles, signal="nll")
