import pytest

from shared_core.data import read_smiles, write_smiles

pytest.importorskip("rdkit")


def test_smi_file_with_names(data_dir):
    result = read_smiles(data_dir / "molecules.smi")
    assert [r.smiles for r in result] == ["CCO", "c1ccccc1", "CC(=O)O", "C"]
    assert [r.name for r in result] == ["ethanol", "benzene", "acetic_acid", ""]
    assert result.n_skipped == 0 and result.metrics()["read"] == 4


def test_invalid_smiles_names_the_line(data_dir):
    path = data_dir / "molecules_bad.smi"
    with pytest.raises(ValueError, match=r"molecules_bad\.smi, line 3: invalid SMILES 'C1CC'"):
        read_smiles(path)
    result = read_smiles(path, skip_invalid=True)
    assert [r.name for r in result] == ["ethanol", "benzene", "acetic_acid"]
    assert [r.line for r in result] == [1, 2, 4]  # each record's own line, past the skipped one
    assert result.skipped == [(3, "invalid SMILES 'C1CC'; expected a SMILES string RDKit parses")]
    assert result.metrics()["skipped"] == 1
    assert result.metrics()["skipped_records"][0]["line"] == 3


def test_csv_with_smiles_and_target_columns(data_dir):
    result = read_smiles(
        data_dir / "molecules.csv", target_columns=["logp", "solubility"], name_column="name"
    )
    assert [r.name for r in result] == ["ethanol", "benzene", "acetic acid"]
    assert result.records[1].targets == {"logp": 1.69, "solubility": -1.64}
    assert [r.line for r in result] == [2, 3, 4]  # the header is line 1


def test_csv_errors_name_the_column_and_line(data_dir, tmp_path):
    with pytest.raises(ValueError, match=r"line 1: no column 'SMILES'"):
        read_smiles(data_dir / "molecules.csv", smiles_column="SMILES")
    with pytest.raises(ValueError, match=r"line 1: no column 'pic50'"):
        read_smiles(data_dir / "molecules.csv", target_columns=["pic50"])
    bad = data_dir / "molecules_bad.csv"
    with pytest.raises(ValueError, match=r"line 3: column 'logp': expected a number, got 'high'"):
        read_smiles(bad, target_columns=["logp"])
    assert len(read_smiles(bad, target_columns=["logp"], skip_invalid=True)) == 2
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("smiles,y\nCCO,1\nCC\n")
    with pytest.raises(ValueError, match=r"line 3: expected 2 fields"):
        read_smiles(ragged, target_columns=["y"])


def test_empty_and_all_invalid_files_are_refused(tmp_path):
    empty = tmp_path / "empty.smi"
    empty.write_text("\n  \n")
    with pytest.raises(ValueError, match=r"empty\.smi is empty"):
        read_smiles(empty)
    bad = tmp_path / "bad.smi"
    bad.write_text("C1CC\nXX\n")
    with pytest.raises(ValueError, match="all 2 records were invalid"):
        read_smiles(bad, skip_invalid=True)
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_smiles(tmp_path / "absent.smi")


def test_write_smiles_round_trip(tmp_path):
    path = write_smiles(tmp_path / "out.smi", ["CCO", "c1ccccc1"], names=["ethanol", "benzene"])
    result = read_smiles(path)
    assert [(r.smiles, r.name) for r in result] == [("CCO", "ethanol"), ("c1ccccc1", "benzene")]
    with pytest.raises(ValueError, match=r"smiles\[1\]"):
        write_smiles(tmp_path / "x.smi", ["CCO", "C C"])
    with pytest.raises(ValueError, match="names: expected 2"):
        write_smiles(tmp_path / "x.smi", ["CCO", "C"], names=["a"])
    assert not (tmp_path / "x.smi").exists()
