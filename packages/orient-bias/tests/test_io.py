from __future__ import annotations

import importlib.util
import tarfile
import zipfile

import numpy as np
import pytest
from orient_bias.io import load_aselmdb, load_npz, load_path, load_qmugs, write_aselmdb

from shared_core.data import Molecule

QM9_XYZ = """5
gdb 1\t157.7118\t157.70997\t157.70699\t0.\t13.21\t-0.3877\t0.1171\t0.5048\t35.3641\t0.044749\t-40.47893\t-40.476062\t-40.475117\t-40.498597\t6.469\t
C\t-0.0126981359\t 1.0858041578\t 0.0080009958\t-0.535689
H\t 0.002150416\t-0.0060313176\t 0.0019761204\t 0.133921
H\t 1.0117308433\t 1.4637511618\t 0.0002765748\t 0.133922
H\t-0.540815069\t 1.4475266138\t-0.8766437152\t 0.133923
H\t-0.5238136345\t 1.4379326443\t 0.9063972942\t 0.133923
1341.307\t1341.3284\t1341.365\t1562.6731\t1562.7453\t3038.3205\t3151.6034\t3151.6788\t3151.7078
C\tC
InChI=1S/CH4/h1H4\tInChI=1S/CH4/h1H4
"""

PLAIN_XYZ = """3
water
O 0.0 0.0 0.1173
H 0.0 0.7572 -0.4692
H 0.0 -0.7572 -0.4692
"""


def _sdf_record(
    name: str, atoms: list[tuple[str, float, float, float]], tags: dict[str, str]
) -> str:
    lines = [name, "  test", "", f"{len(atoms):3d}  0  0  0  0  0  0  0  0  0999 V2000"]
    for el, x, y, z in atoms:
        lines.append(f"{x:10.4f}{y:10.4f}{z:10.4f} {el:<3} 0  0  0  0  0  0  0  0  0  0  0  0")
    lines.append("M  END")
    for k, v in tags.items():
        lines += [f">  <{k}>", v, ""]
    return "\n".join(lines) + "\n$$$$\n"


ATOMS = [("C", 0.0, 0.0, 0.0), ("O", 1.2, 0.1, 0.0), ("H", -0.5, 0.9, 0.2)]


def test_qm9_and_plain_xyz(tmp_path):
    (tmp_path / "dsgdb9nsd_000001.xyz").write_text(QM9_XYZ.replace("*^", "e"))
    (tmp_path / "water.xyz").write_text(PLAIN_XYZ)
    r = load_path(tmp_path)
    assert r.files == 2 and not r.skipped
    names = sorted(m.name for m in r.molecules)
    assert names[0] == "gdb_1"
    ch4 = next(m for m in r.molecules if m.name == "gdb_1")
    assert ch4.properties["U0"] == pytest.approx(-40.47893)
    np.testing.assert_allclose(ch4.positions[0], [-0.0126981359, 1.0858041578, 0.0080009958])


def test_malformed_files_are_skipped_and_reported(tmp_path):
    (tmp_path / "ok.xyz").write_text(PLAIN_XYZ)
    (tmp_path / "short.xyz").write_text("5\nmissing atoms\nC 0 0 0\n")
    (tmp_path / "nan.xyz").write_text("2\nx\nC 0 0 nan\nO 1 0 0\n")
    good = _sdf_record("good", ATOMS, {"E": "1.5"})
    bad = _sdf_record("bad", ATOMS, {}).replace(" C   0", " Qq  0")
    (tmp_path / "mixed.sdf").write_text(good + bad + good)
    r = load_path(tmp_path)
    assert len(r.molecules) == 3  # water + 2 good SDF records
    reasons = dict(r.skipped)
    assert len(r.skipped) == 3
    assert any("record 2" in k for k in reasons)
    assert any("short.xyz" in k and "header says 5 atoms" in v for k, v in reasons.items())
    assert any("nan.xyz" in k for k in reasons)
    with pytest.raises(ValueError):
        load_path(tmp_path / "short.xyz", on_error="raise")


def test_npz_padded_ragged_and_bad(tmp_path):
    pos = np.random.default_rng(0).normal(size=(3, 4, 3))
    num = np.array([[6, 1, 1, 0], [8, 1, 1, 1], [6, 6, 0, 0]])
    np.savez(tmp_path / "padded.npz", positions=pos, numbers=num)
    r = load_npz(tmp_path / "padded.npz")
    assert [len(m) for m in r.molecules] == [3, 4, 2]
    np.savez(
        tmp_path / "ragged.npz", R=pos.reshape(-1, 3)[:9], Z=np.ones(9, int), N=np.array([4, 5])
    )
    assert [len(m) for m in load_npz(tmp_path / "ragged.npz").molecules] == [4, 5]
    pos[1, 0, 0] = np.nan
    np.savez(tmp_path / "nan.npz", positions=pos, numbers=num)
    r = load_npz(tmp_path / "nan.npz")
    assert len(r.molecules) == 2 and len(r.skipped) == 1 and "non-finite" in r.skipped[0][1]
    np.savez(
        tmp_path / "mismatch.npz", R=pos.reshape(-1, 3), Z=np.ones(12, int), N=np.array([4, 5])
    )
    with pytest.raises(ValueError, match="n_atoms sums to 9"):
        load_npz(tmp_path / "mismatch.npz")
    np.savez(tmp_path / "nokeys.npz", a=pos)
    with pytest.raises(ValueError, match="no positions array"):
        load_npz(tmp_path / "nokeys.npz")


def test_archives_tar_and_zip(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.xyz").write_text(PLAIN_XYZ)
    (src / "b.sdf").write_text(_sdf_record("b", ATOMS, {}))
    with tarfile.open(tmp_path / "set.tar.bz2", "w:bz2") as t:
        t.add(src, arcname="set")
    with zipfile.ZipFile(tmp_path / "set.zip", "w") as z:
        z.write(src / "a.xyz", "a.xyz")
    r = load_path(tmp_path / "set.tar.bz2")
    assert len(r.molecules) == 2 and all(m.name.startswith("set.tar.bz2:") for m in r.molecules)
    assert len(load_path(tmp_path / "set.zip").molecules) == 1
    (tmp_path / "broken.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(ValueError, match="not a readable archive"):
        load_path(tmp_path / "broken.tar.gz")


def test_missing_and_unsupported(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_path(tmp_path / "nope.xyz")
    (tmp_path / "x.pdb").write_text("")
    with pytest.raises(ValueError, match="unsupported file type"):
        load_path(tmp_path / "x.pdb")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no molecule files"):
        load_path(tmp_path / "empty")
    with pytest.raises(ValueError, match="on_error"):
        load_path(tmp_path, on_error="ignore")


def test_qmugs_layout(tmp_path):
    """QMugs: structures/<CHEMBL id>/conf_<k>.sdf with level-of-theory-prefixed SD tags."""
    root = tmp_path / "structures"
    for cid in ("CHEMBL1", "CHEMBL2"):
        for k in range(2):
            (root / cid).mkdir(parents=True, exist_ok=True)
            tags = {
                "CHEMBL_ID": cid,
                "CONF_ID": f"conf_{k:02d}",
                "GFN2:TOTAL_ENERGY": "-12.5",
                "DFT:TOTAL_ENERGY": "-113.25",
            }
            (root / cid / f"conf_{k:02d}.sdf").write_text(_sdf_record(cid, ATOMS, tags))
    with tarfile.open(tmp_path / "structures.tar.gz", "w:gz") as t:
        t.add(root, arcname="structures")
    r = load_qmugs(tmp_path / "structures.tar.gz")
    assert sorted(m.name for m in r.molecules) == [
        "CHEMBL1/conf_00",
        "CHEMBL1/conf_01",
        "CHEMBL2/conf_00",
        "CHEMBL2/conf_01",
    ]
    assert r.molecules[0].properties["DFT:TOTAL_ENERGY"] == pytest.approx(-113.25)


@pytest.mark.skipif(
    importlib.util.find_spec("lmdb") is None, reason="lmdb (extra 'omol25') is not installed"
)
def test_aselmdb_round_trip_and_bad_row(tmp_path):
    import json
    import zlib

    import lmdb

    mols = [Molecule([8, 1, 1], [[0, 0, 0.1], [0, 0.76, -0.47], [0, -0.76, -0.47]], name="w"),
            Molecule([6, 8], [[0, 0, 0], [1.13, 0, 0]], name="co")]  # fmt: skip
    path = tmp_path / "omol.aselmdb"
    write_aselmdb(path, mols, info=[{"charge": 0, "spin": 1}, {"charge": 1, "spin": 2}])
    r = load_aselmdb(path)
    assert [len(m) for m in r.molecules] == [3, 2]
    np.testing.assert_allclose(r.molecules[1].positions, mols[1].positions)
    assert r.molecules[1].properties == {"charge": 1, "spin": 2}
    # an orjson-style row (plain lists) and a corrupt row
    env = lmdb.open(str(path), subdir=False, lock=False)
    with env.begin(write=True) as txn:
        row = {"numbers": [1, 1], "positions": [[0, 0, 0], [0.74, 0, 0]], "energy": -31.5}
        txn.put(b"3", zlib.compress(json.dumps(row).encode()))
        txn.put(b"4", b"garbage")
    env.close()
    r = load_path(path)
    assert len(r.molecules) == 3 and r.molecules[2].properties["energy"] == -31.5
    assert len(r.skipped) == 1 and r.skipped[0][0].endswith(":4")
    if importlib.util.find_spec("ase") is not None:
        # cross-check: ASE's own decoder reads our array encoding
        from ase.io.jsonio import decode

        raw = lmdb.open(str(path), subdir=False, readonly=True, lock=False)
        with raw.begin() as txn:
            d = decode(zlib.decompress(txn.get(b"1")).decode())
        np.testing.assert_allclose(d["positions"], mols[0].positions)


@pytest.mark.skipif(
    importlib.util.find_spec("ase") is None, reason="ase (extra 'ase') is not installed"
)
def test_ase_sqlite_db(tmp_path):
    from ase import Atoms
    from ase.db import connect

    db = connect(str(tmp_path / "set.db"))
    db.write(Atoms("H2O", positions=[[0, 0, 0.1], [0, 0.76, -0.47], [0, -0.76, -0.47]]))
    r = load_path(tmp_path / "set.db")
    assert len(r.molecules) == 1 and r.molecules[0].numbers.tolist() == [1, 1, 8]
