import numpy as np
import pytest

from shared_core.data import read_sdf, write_sdf

Chem = pytest.importorskip("rdkit.Chem")


def test_conformers_are_grouped_by_name_with_hydrogens_kept(data_dir):
    result = read_sdf(data_dir / "conformers.sdf")
    ethanol, methanol = result.records
    assert ethanol.GetProp("_Name") == "ethanol" and ethanol.GetNumConformers() == 2
    assert methanol.GetNumConformers() == 1
    assert ethanol.GetNumAtoms() == 9  # the hydrogens of the file, not removed
    energies = [c.GetDoubleProp("energy") for c in ethanol.GetConformers()]
    assert energies == [-1.0, -2.0]
    assert len(read_sdf(data_dir / "conformers.sdf", group_by="none")) == 3


def test_group_by_smiles_ignores_names(data_dir, tmp_path):
    text = (data_dir / "conformers.sdf").read_text().replace("ethanol", "")
    path = tmp_path / "untitled.sdf"
    path.write_text(text)
    by_smiles = read_sdf(path, group_by="smiles")
    assert [m.GetNumConformers() for m in by_smiles] == [2, 1]
    assert [m.GetNumConformers() for m in read_sdf(path)] == [2, 1]  # untitled: by SMILES


def test_written_sdf_reads_back_in_rdkit_with_same_coordinates(data_dir, tmp_path):
    mols = read_sdf(data_dir / "conformers.sdf").records
    out = write_sdf(tmp_path / "out.sdf", mols)
    back = [m for m in Chem.SDMolSupplier(str(out), removeHs=False)]
    assert len(back) == sum(m.GetNumConformers() for m in mols) == 3
    expected = [c.GetPositions() for m in mols for c in m.GetConformers()]
    for record, positions in zip(back, expected, strict=True):
        np.testing.assert_allclose(record.GetConformer().GetPositions(), positions, atol=1e-4)
    again = read_sdf(out)
    assert [m.GetNumConformers() for m in again] == [2, 1]
    assert [c.GetDoubleProp("energy") for c in again.records[0].GetConformers()] == [-1.0, -2.0]


def test_bad_record_names_record_and_line(data_dir, tmp_path):
    records = (data_dir / "conformers.sdf").read_text().split("$$$$\n")
    broken = records[1].replace("  9  8  0", "  9  9  0", 1)  # counts line promises a bond more
    path = tmp_path / "bad.sdf"
    path.write_text("$$$$\n".join([records[0], broken, *records[2:]]))
    first_line = records[0].count("\n") + 2
    with pytest.raises(ValueError, match=rf"bad\.sdf, record 2: \(line {first_line}\) RDKit"):
        read_sdf(path)
    result = read_sdf(path, skip_invalid=True)
    assert result.skipped[0][0] == 2 and result.metrics()["skipped_records"][0]["record"] == 2
    assert [m.GetNumConformers() for m in result] == [1, 1]


def test_same_name_other_atoms_is_refused(data_dir, tmp_path):
    text = (data_dir / "conformers.sdf").read_text().replace("methanol", "ethanol")
    path = tmp_path / "clash.sdf"
    path.write_text(text)
    with pytest.raises(ValueError, match="record 3: .*atoms differ"):
        read_sdf(path)


def test_writer_and_reader_refuse_bad_input(tmp_path):
    empty = tmp_path / "empty.sdf"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty\.sdf is empty"):
        read_sdf(empty)
    with pytest.raises(ValueError, match="group_by"):
        read_sdf(empty, group_by="inchi")
    with pytest.raises(ValueError, match=r"mols\[0\]: has no conformer"):
        write_sdf(tmp_path / "x.sdf", [Chem.MolFromSmiles("CCO")])
    with pytest.raises(TypeError, match=r"mols\[0\]"):
        write_sdf(tmp_path / "x.sdf", ["CCO"])
    assert not (tmp_path / "x.sdf").exists()
