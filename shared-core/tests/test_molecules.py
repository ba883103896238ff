import numpy as np
import pytest

from shared_core.data import iter_qm9pack_csv, iter_sdf, read_xyz


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
    mols = list(iter_sdf(data_dir / "methanol.sdf"))
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
        list(iter_sdf(path))
    path.write_text("x\n\n\n  1  0  0  0  0  0  0  0  0  0999 V3000\n")
    with pytest.raises(ValueError, match="V3000"):
        list(iter_sdf(path))


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        read_xyz("/nonexistent/file.xyz")


def test_qm9pack_csv_fields_and_index(data_dir):
    mols = list(iter_qm9pack_csv(data_dir / "qm9pack_sample.csv"))
    methane = mols[0]
    assert methane.name == "dsgdb9nsd_000001" and methane.symbols == ["C", "H", "H", "H", "H"]
    np.testing.assert_array_equal(methane.positions[0], [-0.0126981359, 1.0858041578, 0.0080009958])
    assert methane.properties["index"] == 1 and methane.properties["smiles"] == "C"
    assert methane.properties["inchi"] == "InChI=1S/CH4/h1H4"
    assert methane.properties["gap"] == pytest.approx(0.5048)


def _bad_qm9pack(tmp_path, data_dir):
    lines = (data_dir / "qm9pack_sample.csv").read_text().splitlines(keepends=True)
    bad = [lines[0], lines[1].replace("'H'", "'Xx'", 1), lines[2].replace("[[", "[[nan,", 1)]
    path = tmp_path / "bad.csv"
    path.write_text("".join([*bad, *lines[3:]]))
    return path


def test_qm9pack_csv_malformed_rows_raise_or_are_collected(tmp_path, data_dir):
    path = _bad_qm9pack(tmp_path, data_dir)
    with pytest.raises(ValueError, match=r"bad\.csv:2: element: unknown element symbol 'Xx'"):
        list(iter_qm9pack_csv(path))
    skipped: list[tuple[str, str]] = []
    kept = list(iter_qm9pack_csv(path, skipped=skipped))
    assert [m.name for m in kept] == ["dsgdb9nsd_000003"]
    assert [w.rsplit(":", 1)[1] for w, _ in skipped] == ["2", "3"]
    assert "coordinate" in skipped[1][1] or "non-finite" in skipped[1][1]


def test_qm9pack_csv_wrong_file(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not a qm9pack CSV"):
        list(iter_qm9pack_csv(path))


def test_atomic_masses_beside_numbers():
    from shared_core.data import ATOMIC_MASSES, ATOMIC_NUMBERS

    assert ATOMIC_MASSES.shape == (len(ATOMIC_NUMBERS) + 1,)
    assert ATOMIC_MASSES[0] == 0.0  # padding
    assert ATOMIC_MASSES[ATOMIC_NUMBERS["C"]] == 12.01
    assert ATOMIC_MASSES[ATOMIC_NUMBERS["H"]] == 1.008
    assert np.all(np.diff(ATOMIC_MASSES[1:20]) > -1.0)  # roughly increasing in the light elements
    with pytest.raises(ValueError):
        ATOMIC_MASSES[1] = 2.0  # read-only
