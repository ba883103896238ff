import numpy as np
import pytest

from shared_core.data import read_ase

pytest.importorskip("ase")


def test_extended_xyz_frames_with_info(data_dir):
    water, h2 = read_ase(data_dir / "frames.extxyz").records
    assert water.name == "water" and water.symbols == ["O", "H", "H"]
    assert water.properties["energy"] == pytest.approx(-14.2)
    np.testing.assert_allclose(h2.positions, [[0, 0, 0], [0, 0, 0.74]])


def test_ase_database(tmp_path):
    from ase import Atoms
    from ase.db import connect

    path = tmp_path / "mols.db"
    with connect(str(path)) as db:
        db.write(Atoms("H2", positions=[[0, 0, 0], [0, 0, 0.74]]), tag="h2")
        db.write(Atoms("OH2", positions=[[0, 0, 0], [0.96, 0, 0], [-0.24, 0.93, 0]]))
    result = read_ase(path)
    assert [m.symbols for m in result] == [["H", "H"], ["O", "H", "H"]]
    assert result.unit == "record"


def test_bad_frame_is_named_or_skipped(data_dir, tmp_path):
    text = (data_dir / "frames.extxyz").read_text().replace("0.0 0.0 0.74", "0.0 0.0 nan")
    path = tmp_path / "nan.extxyz"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"nan\.extxyz, record 2: positions: non-finite"):
        read_ase(path)
    result = read_ase(path, skip_invalid=True)
    assert len(result) == 1 and result.skipped[0][0] == 2
    garbage = tmp_path / "garbage.extxyz"
    garbage.write_text("3\nx\nO 0 0\n")
    with pytest.raises(ValueError, match=r"ASE could not read .*garbage\.extxyz"):
        read_ase(garbage)
    empty = tmp_path / "empty.xyz"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty\.xyz is empty"):
        read_ase(empty)
