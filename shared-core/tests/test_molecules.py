import numpy as np
import pytest

from shared_core.data import iter_qm9pack_csv, read_sdf, read_xyz


def test_qm9_xyz_format(data_dir):
    (mol,) = read_xyz(data_dir / "dsgdb9nsd_000001.xyz")
    assert mol.name == "gdb_1"
    assert mol.symbols == ["C", "H", "H", "H", "H"]
    # coordinates exactly as published (not re-centred), '*^' exponent understood
    np.testing.assert_array_equal(mol.positions[0], [-0.0126981359, 1.0858041578, 0.0080009958])
    assert mol.positions[2, 2] == pytest.approx(2.765748e-4)
    assert mol.properties["gap"] == pytest.approx(0.5048)
    assert mol.properties["smiles"] == "C"


def test_qm9_xyz_matches_qm9pack_csv(data_dir):
    from_csv = {m.name: m for m in iter_qm9pack_csv(data_dir / "qm9pack_sample.csv")}
    assert len(from_csv) == 3
    (ammonia,) = read_xyz(data_dir / "dsgdb9nsd_000002.xyz")
    ref = from_csv["dsgdb9nsd_000002"]
    np.testing.assert_array_equal(ammonia.positions, ref.positions)
    np.testing.assert_array_equal(ammonia.numbers, [7, 1, 1, 1])
    for key in ("mu", "homo", "lumo", "gap", "U0", "Cv"):
        assert ammonia.properties[key] == ref.properties[key]


def test_multi_frame_plain_xyz(data_dir):
    mols = read_xyz(data_dir / "water_dimer.xyz")
    assert [len(m) for m in mols] == [3, 3]
    assert mols[1].positions[0, 0] == 3.0
    assert mols[1].properties["comment"] == "water molecule B, shifted"


def test_sdf(data_dir):
    mols = read_sdf(data_dir / "methanol.sdf")
    assert [m.name for m in mols] == ["methanol", "water"]
    assert mols[0].symbols == ["C", "O", "H", "H", "H", "H"]
    assert mols[0].properties == {"energy": -115.7, "source": "fixture"}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("3\ncomment\nO 0 0 0\nH 0 0 1\n", "header says 3 atoms"),
        ("two\ncomment\nO 0 0 0\n", "expected an atom count"),
        ("1\ncomment\nO 0 zero 0\n", "expected a number"),
        ("1\ncomment\nXx 0 0 0\n", "unknown element"),
        ("1\ncomment\nO 0 nan 0\n", "non-finite"),
        ("1\ncomment\nO 0 0\n", "expected 'element x y z'"),
        ("", "holds no molecule"),
    ],
)
def test_malformed_xyz(tmp_path, text, match):
    path = tmp_path / "bad.xyz"
    path.write_text(text)
    with pytest.raises(ValueError, match=match) as err:
        read_xyz(path)
    assert "bad.xyz" in str(err.value) or match == "unknown element" or match == "non-finite"


def test_malformed_sdf(tmp_path, data_dir):
    good = (data_dir / "methanol.sdf").read_text()
    path = tmp_path / "bad.sdf"
    path.write_text(good.replace("  6  5  0", "  9  5  0", 1))
    with pytest.raises(ValueError, match="bad.sdf"):
        read_sdf(path)
    path.write_text("x\n\n\n  1  0  0  0  0  0  0  0  0  0999 V3000\n")
    with pytest.raises(ValueError, match="V3000"):
        read_sdf(path)


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        read_xyz("/nonexistent/file.xyz")
