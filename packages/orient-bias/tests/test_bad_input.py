"""Bad input at every public entry point: a clear ValueError/TypeError/FileNotFoundError per case."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import asymmetric_molecule
from orient_bias.audit import AuditConfig, audit_molecules, audit_poses
from orient_bias.classifiers import fit_feature_classifier, fit_feature_regressor, pair_auc
from orient_bias.data import load_qm9, parse_qm9pack_csv
from orient_bias.features import orientation_features
from orient_bias.frames import Poses, centre, pad, principal_frames
from orient_bias.io import load_aselmdb, load_npz, load_path
from orient_bias.rotations import geodesic_angle, random_rotations
from orient_bias.uniformity import uniformity_stats

from shared_core.data import Molecule


def _poses(n: int = 30) -> Poses:
    return pad([asymmetric_molecule(s) for s in range(n)])


CASES = [
    # (entry point, call, exception, message)
    ("pad", lambda: pad([]), ValueError, "molecules: expected at least one"),
    ("pad", lambda: pad([np.zeros((3, 3))]), TypeError, "molecules: expected shared_core"),
    ("pad", lambda: pad([asymmetric_molecule(0, 8)], n_max=4), ValueError, "n_max: 4 is smaller"),
    ("pad", lambda: pad([asymmetric_molecule(0)], n_max=0), ValueError, "n_max: expected"),
    (
        "Poses",
        lambda: Poses(np.zeros((2, 3)), np.zeros(2), np.array(["a", "b"])),
        ValueError,
        "positions: expected shape",
    ),
    (
        "Poses",
        lambda: Poses(np.zeros((2, 4, 3)), np.ones((2, 3)), np.array(["a", "b"])),
        ValueError,
        "numbers: expected shape",
    ),
    (
        "Poses",
        lambda: Poses(np.full((1, 2, 3), np.nan), np.ones((1, 2)), np.array(["a"])),
        ValueError,
        "NaN",
    ),
    (
        "Poses",
        lambda: Poses(np.full((1, 2, 3), "x"), np.ones((1, 2)), np.array(["a"])),
        TypeError,
        "positions: expected a real",
    ),
    (
        "Poses",
        lambda: Poses(np.zeros((1, 2, 3)), np.array([[6.5, 1.0]]), np.array(["a"])),
        TypeError,
        "numbers: expected integer",
    ),
    (
        "Poses",
        lambda: Poses(np.zeros((1, 2, 3)), np.array([[6, -1]]), np.array(["a"])),
        ValueError,
        "numbers: atomic numbers must be >= 0",
    ),
    (
        "Poses",
        lambda: Poses(np.zeros((2, 2, 3)), np.ones((2, 2), int), np.array(["a"])),
        ValueError,
        "names: expected shape",
    ),
    ("Poses.rotated", lambda: _poses(3).rotated(np.eye(3)), ValueError, "R: expected shape"),
    (
        "principal_frames",
        lambda: principal_frames(np.zeros((2, 3, 3))),
        TypeError,
        "poses: expected a Poses",
    ),
    (
        "principal_frames",
        lambda: principal_frames(Poses(np.zeros((0, 2, 3)), np.zeros((0, 2), int), np.array([]))),
        ValueError,
        "empty batch",
    ),
    (
        "principal_frames",
        lambda: principal_frames(pad([Molecule([6], [[0.0, 0, 0]])])),
        ValueError,
        "fewer than 2 atoms",
    ),
    (
        "principal_frames",
        lambda: principal_frames(pad([Molecule([6, 6], np.zeros((2, 3)))])),
        ValueError,
        "all atoms coincide",
    ),
    ("principal_frames", lambda: principal_frames(_poses(2), "charge"), ValueError, "weighting"),
    ("principal_frames", lambda: principal_frames(_poses(2), tol=2.0), ValueError, "tol"),
    ("principal_frames", lambda: principal_frames(_poses(2), tol=True), ValueError, "tol"),
    (
        "principal_frames",
        lambda: principal_frames(
            Poses(np.ones((1, 2, 3)), np.array([[6, 200]]), np.array(["a"])), "mass"
        ),
        ValueError,
        "numbers: expected atomic numbers in 0..118",
    ),
    ("centre", lambda: centre(_poses(2), "charge"), ValueError, "weighting"),
    (
        "orientation_features",
        lambda: orientation_features(_poses(3), principal_frames(_poses(2))),
        ValueError,
        "frames: expected 3 frames",
    ),
    ("random_rotations", lambda: random_rotations(-1), ValueError, "n: expected"),
    ("random_rotations", lambda: random_rotations(2.5), ValueError, "n: expected"),  # type: ignore[arg-type]
    (
        "geodesic_angle",
        lambda: geodesic_angle(np.eye(3), np.eye(2)),
        ValueError,
        "expected two arrays of shape",
    ),
    (
        "geodesic_angle",
        lambda: geodesic_angle(random_rotations(3, 0), random_rotations(4, 0)),
        ValueError,
        "does not broadcast",
    ),
    (
        "uniformity_stats",
        lambda: uniformity_stats(random_rotations(5, 0)),
        ValueError,
        "need at least",
    ),
    (
        "uniformity_stats",
        lambda: uniformity_stats(np.zeros((20, 3))),
        ValueError,
        "R: expected shape",
    ),
    ("pair_auc", lambda: pair_auc([0.1, 0.2], [0.3]), ValueError, "s1: expected a 1-D array"),
    ("pair_auc", lambda: pair_auc([0.1, np.nan], [0.3, 0.4]), ValueError, "NaN"),
    ("pair_auc", lambda: pair_auc([], []), ValueError, "length >= 2"),
    (
        "fit_feature_classifier",
        lambda: fit_feature_classifier(np.zeros((4, 2)), np.zeros(4), "svm"),
        ValueError,
        "kind",
    ),
    (
        "fit_feature_classifier",
        lambda: fit_feature_classifier(np.zeros((4, 2)), np.zeros(3)),
        ValueError,
        "y: expected shape",
    ),
    (
        "fit_feature_classifier",
        lambda: fit_feature_classifier(np.full((4, 2), np.nan), np.r_[0, 1, 0, 1]),
        ValueError,
        "X: contains NaN",
    ),
    (
        "fit_feature_classifier",
        lambda: fit_feature_classifier(np.zeros((4, 2)), np.zeros(4)),
        ValueError,
        "two classes",
    ),
    (
        "fit_feature_classifier",
        lambda: fit_feature_classifier(np.zeros(4), np.zeros(4)),
        ValueError,
        "X: expected a real",
    ),
    (
        "fit_feature_regressor",
        lambda: fit_feature_regressor(np.zeros((4, 2)), np.array([0, 1, np.nan, 1])),
        ValueError,
        "y: contains NaN",
    ),
    ("AuditConfig", lambda: AuditConfig(max_molecules=5), ValueError, "max_molecules"),
    ("AuditConfig", lambda: AuditConfig(test_fraction=1.0), ValueError, "test_fraction"),
    ("AuditConfig", lambda: AuditConfig(alpha=0.0), ValueError, "alpha"),
    ("AuditConfig", lambda: AuditConfig(model="svm"), ValueError, "model"),
    ("AuditConfig", lambda: AuditConfig(weighting="charge"), ValueError, "weighting"),
    ("AuditConfig", lambda: AuditConfig(n_bootstrap=0), ValueError, "n_bootstrap"),
    ("AuditConfig", lambda: AuditConfig(seed=-1), ValueError, "seed"),
    ("audit_poses", lambda: audit_poses(_poses(10)), ValueError, "at least 20 usable"),
    (
        "audit_poses",
        lambda: audit_poses([asymmetric_molecule(0)]),
        TypeError,
        "poses: expected a Poses",
    ),  # type: ignore[arg-type]
    ("audit_molecules", lambda: audit_molecules([]), ValueError, "no molecule with at least 2"),
    (
        "audit_molecules",
        lambda: audit_molecules([Molecule([6], [[0.0, 0, 0]])] * 30),
        ValueError,
        "no molecule with at least 2",
    ),
    ("load_path", lambda: load_path("/nonexistent/poses.xyz"), FileNotFoundError, "does not exist"),
    ("load_path", lambda: load_path("x.xyz", on_error="ignore"), ValueError, "on_error"),
    (
        "parse_qm9pack_csv",
        lambda: parse_qm9pack_csv("/nonexistent/qm9.csv"),
        FileNotFoundError,
        "does not exist",
    ),
    ("load_qm9", lambda: load_qm9(0), ValueError, "n: expected"),
    ("load_qm9", lambda: load_qm9(10, rows_per_part=0), ValueError, "rows_per_part"),
]


@pytest.mark.parametrize(
    ("entry", "call", "exc", "match"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_bad_input_raises_a_clear_error(entry, call, exc, match):
    if entry == "load_qm9" and match == "n: expected" and not importlib.util.find_spec("qm9pack"):
        pytest.skip("qm9pack (extra 'qm9') is not installed")
    with pytest.raises(exc, match=match):
        call()


def test_bad_files(tmp_path):
    (tmp_path / "x.txt").write_text("hello")
    with pytest.raises(ValueError, match="unsupported file type"):
        load_path(tmp_path / "x.txt")
    np.savez(tmp_path / "nokeys.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="has no positions array"):
        load_npz(tmp_path / "nokeys.npz")
    np.savez(tmp_path / "shape.npz", positions=np.zeros((2, 3, 2)), numbers=np.ones((2, 3)))
    with pytest.raises(ValueError, match="positions must be"):
        load_npz(tmp_path / "shape.npz")
    # NaN coordinates inside a file: that molecule is skipped and reported
    pos = np.random.default_rng(0).normal(size=(3, 4, 3))
    pos[1, 2] = np.nan
    np.savez(tmp_path / "nan.npz", positions=pos, numbers=np.full((3, 4), 6))
    out = load_npz(tmp_path / "nan.npz")
    assert len(out.molecules) == 2 and "non-finite" in out.skipped[0][1]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no molecule files"):
        load_path(tmp_path / "empty")


_NO_TORCH = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, Block())
import importlib.metadata as md
_version = md.version
def version(name):  # the distribution's metadata is gone too, as in a venv without torch
    if name == "torch":
        raise md.PackageNotFoundError(name)
    return _version(name)
md.version = version
"""


def test_audit_and_sklearn_classifiers_work_without_torch(tmp_path):
    """issue 12: torch is an extra; the audit and the feature classifiers never import it."""
    mols = [asymmetric_molecule(s, n=6 + s % 5) for s in range(30)]
    p = pad(mols)
    np.savez(
        tmp_path / "aligned.npz", positions=principal_frames(p).canonical(p), numbers=p.numbers
    )
    script = _NO_TORCH + textwrap.dedent(f"""
        import json
        import orient_bias
        from orient_bias.cli import main
        code = main(["audit", {str(tmp_path / "aligned.npz")!r}, "--runs", {str(tmp_path / "runs")!r},
                     "--no-mpnn"])
        mpnn = main(["audit", {str(tmp_path / "aligned.npz")!r}, "--runs", {str(tmp_path / "runs")!r}])
        try:
            orient_bias.PointCloudNet
            model_error = ""
        except ModuleNotFoundError as e:  # require_extra's one line, an ImportError at import
            model_error = str(e)
        repro = main(["reproduce", "--scale", "micro", "--out", {str(tmp_path / "runs")!r}])
        print(json.dumps({{"code": code, "mpnn": mpnn, "repro": repro, "torch": "torch" in sys.modules,
                           "model_error": model_error}}))
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == 0 and not result["torch"]
    assert result["mpnn"] == 2 and "pass --no-mpnn to audit without it" in proc.stderr
    assert "needs the 'torch' extra of orient-bias" in result["model_error"]
    assert "uv sync --package orient-bias --extra torch" in result["model_error"]
    assert "\n" not in result["model_error"]
    assert result["repro"] == 2
    err = proc.stderr.strip().splitlines()
    assert err[-1].startswith("orient-bias: error: orient-bias reproduce needs the 'torch'")
    assert "pip install 'orient-bias[torch" in err[-1]


# ---- missing extras: shared_core.data.require_extra's one line -----------------------------


def _hide(monkeypatch, *modules):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in modules else real(name, *a)
    )


@pytest.mark.parametrize(("module", "extra"), [("qm9pack", "qm9"), ("rdkit", "chem")])
def test_reproduce_without_an_extra_is_one_cli_line(module, extra, monkeypatch, capsys, tmp_path):
    from orient_bias.cli import main

    from shared_core.testing import assert_missing_extra_is_one_line

    line = assert_missing_extra_is_one_line(
        main, module, "orient-bias", extra, monkeypatch=monkeypatch, capsys=capsys, out=tmp_path
    )
    assert f"needs the '{extra}' extra of orient-bias" in line


def test_reproduce_names_every_missing_extra_in_one_line(monkeypatch):
    from orient_bias.cli import reproduce

    from shared_core.cli import ReproduceArgs

    _hide(monkeypatch, "torch", "qm9pack", "rdkit")
    with pytest.raises(FileNotFoundError) as e:
        reproduce(ReproduceArgs(scale="micro", device="cpu"))
    message = str(e.value)
    assert "\n" not in message
    assert "needs the 'torch', 'qm9' and 'chem' extras of orient-bias" in message
    assert "uv sync --package orient-bias --extra torch --extra qm9 --extra chem" in message
    assert "pip install 'orient-bias[torch,qm9,chem]'" in message


@pytest.mark.parametrize(
    ("module", "extra", "call"),
    [
        ("lmdb", "omol25", lambda p: load_aselmdb(p / "x.aselmdb")),
        ("ase", "ase", lambda p: load_path(p / "x.db")),
    ],
)
def test_extras_outside_the_workspace_root_name_only_the_package_sync(
    module, extra, call, monkeypatch, tmp_path
):
    (tmp_path / "x.aselmdb").write_bytes(b"")
    (tmp_path / "x.db").write_bytes(b"")
    _hide(monkeypatch, module)
    with pytest.raises(FileNotFoundError) as e:
        call(tmp_path)
    message = str(e.value)
    assert f"needs the '{extra}' extra of orient-bias" in message and "\n" not in message
    assert f"uv sync --package orient-bias --extra {extra}" in message
    assert "--all-packages" not in message  # `uv sync --all-packages` would not install it
    assert f"pip install 'orient-bias[{extra}]'" in message
