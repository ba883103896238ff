from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from conftest import asymmetric_molecule
from orient_bias.experiments import classify, regress
from orient_bias.frames import pad, principal_frames
from orient_bias.rotations import random_rotations

from shared_core.data import Molecule

needs_rdkit = pytest.mark.skipif(
    importlib.util.find_spec("rdkit") is None, reason="RDKit (extra 'chem') is not installed"
)


def _aligned_poses(n: int):
    mols = [asymmetric_molecule(s, n=6 + s % 6) for s in range(n)]
    p = pad(mols)
    y = principal_frames(p).canonical(p)
    return pad([Molecule(m.numbers, y[b, : len(m)]) for b, m in enumerate(mols)])


def test_finding1_detects_planted_alignment_and_control_is_chance():
    cfg = classify.ClassifyConfig(
        models=("logistic", "hgb", "pointcloud"), net_epochs=3, net_hidden=16, n_bootstrap=100
    )
    rows = classify.run(_aligned_poses(200), cfg)
    pub = {r["model"]: r for r in rows if r["dataset"] == "QM9 as published"}
    ctl = [r for r in rows if r["dataset"] != "QM9 as published"]
    assert pub["gradient boosting (features)"]["roc_auc"] > 0.95
    assert all(r["auc_ci_low"] < 0.75 for r in ctl)
    assert len(rows) == 6


def test_finding2_recovers_orientation_planted_target_and_control_fails():
    poses = pad([asymmetric_molecule(s) for s in range(600)])
    poses = poses.rotated(random_rotations(len(poses), 5))  # spread the orientations
    axes = principal_frames(poses).axes
    Y = np.stack([axes[:, 0, 2], axes[:, 1, 0]], 1)  # targets that ARE the orientation
    cfg = regress.RegressConfig(targets=("a", "b"), epochs=60, hidden=32, depth=2)
    rows = regress.run(poses, Y, cfg)
    pub = [r for r in rows if r["poses"] == "published"]
    ctl = [r for r in rows if r["poses"] != "published"]
    assert min(r["r2"] for r in pub) > 0.5
    assert max(r["r2"] for r in ctl) < 0.15


@needs_rdkit
def test_tanimoto_nearest_matches_rdkit_and_invalid_smiles():
    from orient_bias.experiments.similarity import fingerprints, tanimoto_nearest
    from rdkit import Chem, DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    smiles = np.array(["CCO", "CCN", "c1ccccc1", "c1ccccc1O", "CC(=O)O", "CCCO", "C1CC1"])
    bits, rings = fingerprints(smiles)
    assert rings.tolist() == [0, 0, 1, 1, 0, 0, 1]
    nn, sim = tanimoto_nearest(bits, block=3)
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    fps = [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in smiles]
    for i, fp in enumerate(fps):
        ref = np.array(DataStructs.BulkTanimotoSimilarity(fp, fps))
        ref[i] = -1
        assert sim[i] == pytest.approx(ref.max(), abs=1e-6)
        assert ref[nn[i]] == pytest.approx(ref.max(), abs=1e-6)
    with pytest.raises(ValueError, match="invalid SMILES"):
        fingerprints(np.array(["CCO", "C1CC"]))


def test_finding1_mpnn_needs_bonds_and_known_models():
    with pytest.raises(ValueError, match="models"):
        classify.ClassifyConfig(models=("svm",))
    with pytest.raises(ValueError, match="bonds"):
        classify.classify(_aligned_poses(20), "x", classify.ClassifyConfig(models=("mpnn",)))


def test_kl_rows_and_sign_check_on_planted_alignment():
    from orient_bias.experiments import kl

    poses = _aligned_poses(300)  # every pose in its principal frame: far from Haar
    rows, check = kl.run(poses, kl.KLConfig(sizes=(200, None)))
    by = {(r["n"], r["frames"]): r["kl_to_haar_nats"] for r in rows}
    assert by[(300, "published, our frames")] > 2.0
    assert abs(by[(300, "randomly rotated (control)")]) < 0.5
    assert check["molecules"] == 300 and check["frames_differ"] == 0
