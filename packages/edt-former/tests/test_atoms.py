from __future__ import annotations

import pytest
from edt_former.atoms import AtomVocab, check_alignment, parse_smiles, tokenize_atoms
from edt_former.reference import upstream_tokenize_atoms
from rdkit import Chem


def test_atom_count_equals_rdkit_heavy_atoms(qm9_zinc_smiles: list[str]) -> None:
    assert len(qm9_zinc_smiles) == 1000
    for s in qm9_zinc_smiles:
        mol = Chem.MolFromSmiles(s)
        tokens = tokenize_atoms(s)
        assert len(tokens) == mol.GetNumHeavyAtoms(), s
        assert tokens == [a.GetSymbol() for a in mol.GetAtoms()], s
        parse_smiles(s)  # the alignment check passes


@pytest.mark.parametrize(
    ("smiles", "expected"),
    [
        ("c1cc[nH]c1", ["C", "C", "C", "N", "C"]),  # [nH]: one N, the H is not an atom
        ("C[NH3+].[O-]C(=O)C", ["C", "N", "O", "C", "O", "C"]),  # charges
        ("[Co]CO", ["Co", "C", "O"]),  # cobalt only inside brackets
        ("Co", ["C", "O"]),  # outside brackets: C then aromatic o (OpenSMILES organic subset)
        ("CCl", ["C", "Cl"]),
        ("c1cc[se]c1", ["C", "C", "C", "Se", "C"]),
        ("[13CH3][2H]", ["C"]),  # explicit hydrogen (isotope or not) is not heavy
        ("[C@@H](F)(Cl)Br", ["C", "F", "Cl", "Br"]),
        ("C1CC1%10CC%10", ["C", "C", "C", "C", "C"]),  # ring digits are not atoms
    ],
)
def test_tokenizer_edge_cases(smiles: str, expected: list[str]) -> None:
    assert tokenize_atoms(smiles) == expected


def test_upstream_regex_differs_where_documented() -> None:
    assert upstream_tokenize_atoms("Co") == ["Co"]  # read as cobalt
    assert upstream_tokenize_atoms("c1cc[se]c1") == ["C", "C", "C", "S", "C"]  # Se read as S
    assert upstream_tokenize_atoms("[te]1cccc1") == ["C", "C", "C", "C"]  # Te dropped
    # on ordinary organic SMILES the two agree
    assert upstream_tokenize_atoms("CC(=O)Nc1ccc(Cl)cc1") == tokenize_atoms("CC(=O)Nc1ccc(Cl)cc1")


def test_vocab_encode() -> None:
    v = AtomVocab()
    ids = v.encode("C[Hg]Cl")
    assert ids[0] == v.bos and ids[-1] == v.eos and len(ids) == 5
    assert v.id("Uuo") == v.unk
    assert v.tokens[:4] == ("<pad>", "<bos>", "<eos>", "<unk>")


@pytest.mark.parametrize(
    ("bad", "error", "match"),
    [
        ("C1CC", ValueError, "cannot parse"),  # unclosed ring
        ("c1cccc1", ValueError, "cannot parse"),  # cannot kekulize
        ("", ValueError, "non-empty"),
        ("   ", ValueError, "non-empty"),
        (42, TypeError, "SMILES str"),
        ("[2H]C", ValueError, "explicit hydrogen"),
    ],
)
def test_bad_smiles_raise(bad: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        parse_smiles(bad)  # type: ignore[arg-type]


def test_bracket_without_element_raises() -> None:
    with pytest.raises(ValueError, match="no element symbol"):
        tokenize_atoms("C[]C")


def test_alignment_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="3 heavy-atom tokens .* 2 nodes"):
        check_alignment("CCO", ["C", "C"])
    with pytest.raises(ValueError, match="atom token 2 .* is O but graph node 2 is N"):
        check_alignment("CCO", ["C", "C", "N"])
