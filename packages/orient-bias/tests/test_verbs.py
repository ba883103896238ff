"""`orient-bias audit` and `augment` through `main([...])` on the files in tests/data/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import asymmetric_molecule
from orient_bias.cli import main
from orient_bias.frames import pad, principal_frames
from orient_bias.io import write_xyz
from orient_bias.rotations import haar_angle_cdf, random_rotations
from orient_bias.uniformity import knn_kl_to_haar, pairwise_geodesic
from scipy.stats import kstest

from shared_core.data import Molecule, read_xyz

DATA = Path(__file__).parent / "data"
XYZ = DATA / "qm9_30.xyz"
SDF = DATA / "mols.sdf"


def _err(capsys) -> str:
    """The one error line (the progress lines before it are the heartbeat's)."""
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if "error" in line]
    assert len(errors) == 1 and err[-1].startswith("orient-bias: error:"), err
    return err[-1]


def _aligned(n: int, seed: int = 0) -> list[Molecule]:
    """Molecules placed in their principal frame: the most biased poses there are."""
    mols = [asymmetric_molecule(seed * 10000 + s, n=6 + s % 5) for s in range(n)]
    canon = principal_frames(pad(mols)).canonical(pad(mols))
    return [Molecule(m.numbers, canon[i, : len(m)], name=m.name) for i, m in enumerate(mols)]


def test_audit_writes_the_report_with_a_verdict(tmp_path, capsys):
    out = tmp_path / "report"
    code = main(["audit", "--data", str(XYZ), "--out", str(out), "--runs", str(tmp_path / "r"),
                 "--no-mpnn"])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0
    assert "KL to Haar" in printed and "30 read, 30 used" in printed
    report = (out / "report.md").read_text()
    assert "**Verdict:**" in report and "KL of the principal frames" in report
    assert (out / "mollweide_axes.png").exists() and (out / "angles_to_mode.png").exists()
    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    assert metrics["verdict"].split(" ")[0] in ("BIASED:", "no")
    assert metrics["uniformity"]["n"] == 30 and metrics["mpnn"] == {}
    # --out is refused once it holds a report; nothing else is written
    assert main(["audit", "--data", str(XYZ), "--out", str(out), "--no-mpnn"]) == 2
    assert "--out" in _err(capsys)


def test_audit_runs_the_papers_mpnn_and_flags_aligned_poses(tmp_path, capsys):
    write_xyz(tmp_path / "aligned.xyz", _aligned(120))
    code = main(["audit", "--data", str(tmp_path / "aligned.xyz"), "--mpnn-steps", "2",
                 "--runs", str(tmp_path / "r"), "--fail-on-bias"])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 1 and printed.startswith("BIASED")
    assert "the paper's MPNN, 2 steps" in printed
    run = next((tmp_path / "r" / "orient-bias").iterdir())
    metrics = json.loads((run / "metrics.json").read_text())["metrics"]
    assert set(metrics["mpnn"]) >= {"auc", "ci_low", "ci_high", "p_value", "accuracy"}
    kl = metrics["uniformity"]
    assert kl["kl_to_haar_published"] > kl["kl_to_haar_rotated"] + 1.0


def test_audit_keeps_the_positional_path(tmp_path, capsys):
    assert main(["audit", str(XYZ), "--runs", str(tmp_path), "--no-mpnn"]) == 0
    assert "30 used" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("wrong_count.xyz", "5\nframe\nC 0 0 0\nH 1 0 0\n", "header says 5 atoms"),
        ("empty.xyz", "", "no molecule"),
    ],
)
def test_audit_bad_xyz_is_one_error_line(tmp_path, capsys, name, text, expected):
    (tmp_path / name).write_text(text)
    assert main(["audit", "--data", str(tmp_path / name), "--runs", str(tmp_path)]) == 2
    err = _err(capsys)
    assert expected in err and name in err
    assert not (tmp_path / "orient-bias").exists()  # nothing half-written


def test_audit_skip_invalid_skips_and_counts_a_bad_frame(tmp_path, capsys):
    shutil.copy(XYZ, tmp_path / "good.xyz")
    (tmp_path / "bad.xyz").write_text("5\nframe\nC 0 0 0\nH 1 0 0\n")
    assert main(["audit", "--data", str(tmp_path), "--no-mpnn"]) == 2
    assert "bad.xyz" in _err(capsys)
    code = main(["audit", "--data", str(tmp_path), "--skip-invalid", "--no-mpnn",
                 "--runs", str(tmp_path / "r")])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0 and "1 skipped" in printed and "bad.xyz" in printed


def _no_coordinates_sdf(path: Path) -> None:
    """mols.sdf plus one record whose atoms all sit at the origin (a molfile without coordinates)."""
    text = SDF.read_text()
    first = text.split("$$$$\n")[0].splitlines()
    lines = [*first[:4]]
    for line in first[4:]:
        if len(line) > 31 and line[31:34].strip().isalpha():  # an atom line
            line = "    0.0000    0.0000    0.0000" + line[30:]
        lines.append(line)
    path.write_text(text + "\n".join(lines).replace("dsgdb9nsd_000007", "flat", 1) + "\n$$$$\n")


def test_sdf_without_coordinates_is_refused_by_audit_and_augment(tmp_path, capsys):
    bad = tmp_path / "bad.sdf"
    _no_coordinates_sdf(bad)
    assert main(["augment", "--data", str(bad), "--out", str(tmp_path / "o.sdf")]) == 2
    assert "'flat' has no coordinates" in _err(capsys)
    assert not (tmp_path / "o.sdf").exists()
    assert main(["augment", "--data", str(bad), "--out", str(tmp_path / "o.sdf"),
                 "--skip-invalid"]) == 0  # fmt: skip
    assert "skipped" in capsys.readouterr().out
    assert main(["audit", "--data", str(bad), "--no-mpnn"]) == 2
    assert "no coordinates" in _err(capsys)


def test_csv_without_the_coordinate_columns_is_one_error_line(tmp_path, capsys):
    (tmp_path / "mols.csv").write_text("smiles,y\nCCO,1.0\n")
    assert main(["audit", "--data", str(tmp_path / "mols.csv"), "--no-mpnn"]) == 2
    assert "mols.csv" in _err(capsys)


def _pairwise(x: np.ndarray) -> np.ndarray:
    return np.linalg.norm(x[:, None] - x[None], axis=-1)


def test_augment_sdf_keeps_bonds_names_distances_and_centroids(tmp_path, capsys):
    from rdkit import Chem

    out = tmp_path / "rotated.sdf"
    assert main(["augment", "--data", str(SDF), "--out", str(out), "--seed", "0"]) == 0
    before = [m for m in Chem.SDMolSupplier(str(SDF), removeHs=False)]
    after = [m for m in Chem.SDMolSupplier(str(out), removeHs=False)]
    assert len(after) == len(before) == 5
    for a, b in zip(before, after, strict=True):
        assert a.GetProp("_Name") == b.GetProp("_Name")
        assert Chem.MolToSmiles(a) == Chem.MolToSmiles(b)
        xa, xb = a.GetConformer().GetPositions(), b.GetConformer().GetPositions()
        np.testing.assert_allclose(_pairwise(xb), _pairwise(xa), atol=2e-4)  # 4 decimals in SDF
        np.testing.assert_allclose(xb.mean(0), xa.mean(0), atol=2e-4)
        assert np.abs(xb - xa).max() > 0.1  # actually rotated
    # same seed, same file; another seed, another file
    assert main(["augment", "--data", str(SDF), "--out", str(tmp_path / "again.sdf")]) == 0
    assert (tmp_path / "again.sdf").read_text() == out.read_text()
    assert main(["augment", "--data", str(SDF), "--out", str(tmp_path / "s1.sdf"),
                 "--seed", "1"]) == 0  # fmt: skip
    assert (tmp_path / "s1.sdf").read_text() != out.read_text()


def test_augment_xyz_in_and_out(tmp_path, capsys):
    assert main(["augment", "--data", str(XYZ), "--out", str(tmp_path / "r.xyz")]) == 0
    before, after = read_xyz(XYZ), read_xyz(tmp_path / "r.xyz")
    comments = [m.properties["comment"] for m in after]
    assert comments == [m.properties["comment"] for m in before]
    assert comments[0] == "dsgdb9nsd_000007"
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a.numbers, b.numbers)
        np.testing.assert_allclose(_pairwise(b.positions), _pairwise(a.positions), atol=1e-6)
    assert main(["augment", "--data", str(SDF), "--out", str(tmp_path / "s.xyz")]) == 0
    assert len(read_xyz(tmp_path / "s.xyz")) == 5
    assert main(["augment", "--data", str(XYZ), "--out", str(tmp_path / "r.sdf")]) == 2
    assert "SDF needs bonds" in _err(capsys)
    assert main(["augment", "--data", str(XYZ), "--out", str(tmp_path / "r.pdb")]) == 2
    assert "expected a .sdf or .xyz" in _err(capsys)


def test_augmented_frames_are_haar_like_the_randomly_rotated_control(tmp_path):
    """The rotation between each molecule's frame before and after `augment` is Haar: its angle
    follows the Haar angle law (KS), and the KL of the augmented frames to Haar matches that of
    a control rotated with `random_rotations`, far below the aligned input's."""
    mols = _aligned(600, seed=1)
    write_xyz(tmp_path / "aligned.xyz", mols)
    assert main(["augment", "--data", str(tmp_path / "aligned.xyz"),
                 "--out", str(tmp_path / "aug.xyz"), "--seed", "3"]) == 0  # fmt: skip
    aug = read_xyz(tmp_path / "aug.xyz")
    f_in = principal_frames(pad(mols)).axes
    f_aug = principal_frames(pad(aug)).axes
    R = random_rotations(len(mols), 11)
    control = [
        Molecule(m.numbers, m.positions @ r.T, name=m.name) for m, r in zip(mols, R, strict=True)
    ]
    f_ctl = principal_frames(pad(control)).axes
    kl_in, kl_aug, kl_ctl = knn_kl_to_haar(f_in), knn_kl_to_haar(f_aug), knn_kl_to_haar(f_ctl)
    assert kl_in > 3.0
    assert abs(kl_aug - kl_ctl) < 0.15, (kl_aug, kl_ctl)
    angles = np.diag(pairwise_geodesic(f_aug, f_in))
    assert kstest(angles, haar_angle_cdf).pvalue > 0.01
