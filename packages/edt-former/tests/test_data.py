from __future__ import annotations

import numpy as np
import pytest
import torch
from _molecules import TEN_SMILES
from edt_former.data import (
    QUESTIONS,
    Encoded,
    answer_ids,
    build_qa,
    collate,
    encode_prompts,
    prompt_text,
    structure_counts,
)
from edt_former.llm import tiny_llm
from edt_former.model import IGNORE, freeze_llm

QM9 = list(TEN_SMILES)


def _qa() -> object:
    targets = np.arange(len(QM9) * 2, dtype=float).reshape(len(QM9), 2)
    return build_qa(
        QM9, targets, ("gap", "mu"), ["CCCl", "OCC(O)CO"], np.array([-2.0, 1.0]), seed=0
    )


def test_structure_counts() -> None:
    assert structure_counts("c1ccncc1N") == {"rings": 1.0, "aromatic": 6.0, "nitrogen": 2.0}


def test_questions_and_thresholds() -> None:
    qa = _qa()
    assert set(qa.values) == {"gap", "dipole", "rings", "aromatic", "nitrogen", "soluble"}
    for q, v in qa.values.items():
        tv = v[qa.train][np.isfinite(v[qa.train])]
        assert qa.thresholds[q] == pytest.approx(np.median(tv))
    mols, qs, ys = qa.rows("test")
    assert len(mols) == len(qs) == len(ys) and set(ys.tolist()) <= {0, 1}
    assert set(mols.tolist()) <= set(qa.test.tolist())
    # the solubility molecules are asked the solubility question only
    assert all((q == "soluble") == (m >= len(QM9)) for m, q in zip(mols, qs, strict=True))


def test_prompt_has_no_smiles_and_no_answer() -> None:
    p = prompt_text("gap", 3)
    assert p.count("<mol>") == 3 and "yes" not in p and " no " not in p
    assert "CCO" in prompt_text("gap", 3, "CCO") and "<mol>" not in prompt_text("gap", 3, "CCO")
    assert "C C O" in prompt_text("gap", 3, "CCO", spaced=True)


def test_encode_and_collate() -> None:
    llm, tok = tiny_llm()
    freeze_llm(llm, tok)
    yes, no = answer_ids(tok)
    rows = encode_prompts(tok, ["gap", "rings"], np.array([1, 0]), 2)
    assert rows[0][-1] == yes and rows[1][-1] == no
    assert tok.unk_token_id not in rows[0] + rows[1]  # every prompt word is in the vocabulary
    smi = encode_prompts(
        tok, list(QUESTIONS)[:2], np.array([1, 1]), 0, ["CC(=O)O", "c1ccccc1"], spaced=True
    )
    assert tok.unk_token_id not in smi[0] + smi[1]
    enc = Encoded(
        nodes=[torch.ones(3, 4), torch.ones(6, 4)],
        brics=[np.array([0, 0, 1]), np.zeros(6, dtype=np.int64)],
        entropy=[np.array([0, 1, 1]), np.arange(6) // 3],
    )
    b = collate(enc, [0, 1], rows, int(tok.pad_token_id))
    assert b["nodes"].shape == (2, 6, 4) and b["node_mask"].sum(1).tolist() == [3, 6]
    assert (b["brics_ids"][0, 3:] == -1).all()
    assert ((b["labels"] != IGNORE).sum(1) == 1).all()
    n0 = len(rows[0])
    assert b["labels"][0, n0 - 1] == yes and b["attention_mask"][0, :n0].all()


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="one log S value"):
        build_qa(QM9, np.zeros((len(QM9), 2)), ("gap", "mu"), ["CCO"], np.array([1.0, 2.0]))

    class TwoTokens:
        def __call__(self, text: str, add_special_tokens: bool = False) -> dict:
            return {"input_ids": [1, 2]}

    with pytest.raises(ValueError, match="must be one token"):
        answer_ids(TwoTokens())
