from __future__ import annotations

import numpy as np
import pytest
from conftest import asymmetric_molecule
from orient_bias.audit import AuditConfig, audit_molecules, audit_poses
from orient_bias.frames import centre, pad, principal_frames
from orient_bias.rotations import random_rotations

from shared_core.data import Molecule

CFG = AuditConfig(n_bootstrap=200, n_permutations=500, seed=0)


def _aligned(n: int) -> list[Molecule]:
    """Synthetic molecules written in their principal-axes frame (like a chemistry code would)."""
    mols = [asymmetric_molecule(s, n=6 + s % 10) for s in range(n)]
    p = pad(mols)
    y = principal_frames(p).canonical(p)
    return [Molecule(m.numbers, y[b, : len(m)], name=m.name) for b, m in enumerate(mols)]


def test_principal_axes_aligned_dataset_is_biased():
    result, _ = audit_molecules(_aligned(300), CFG)
    assert result.biased
    assert result.auc > 0.95 and result.ci_low > 0.9
    assert result.p_value == pytest.approx(1 / 501)


def test_pre_rotated_dataset_is_not_biased():
    p = centre(pad(_aligned(300)))
    rotated = p.rotated(random_rotations(len(p), 123))
    result, _ = audit_poses(rotated, CFG)
    assert not result.biased
    assert result.ci_low <= 0.5 <= result.ci_high
    assert result.uniformity["kl_to_haar_published"] < 0.3


def test_qm9_real_subset_is_biased(qm9_csv):
    """The real QM9 poses (first 400 rows of part 1): the audit flags them."""
    from orient_bias.data import parse_qm9pack_csv
    from orient_bias.frames import Poses

    arrays, skipped = parse_qm9pack_csv(qm9_csv, limit=400)
    assert not skipped
    poses = Poses(arrays["positions"], arrays["numbers"], arrays["names"])
    result, _ = audit_poses(poses, CFG)
    assert result.biased and result.auc > 0.6


def test_skips_unusable_molecules_and_counts_them():
    mols = _aligned(60)
    mols.append(Molecule([6], [[0.0, 0, 0]], name="single"))
    mols.append(Molecule([6, 6], [[1.0, 1, 1], [1.0, 1, 1]], name="coincident"))
    result, _ = audit_molecules(mols, CFG, skipped=[("bad.xyz", "unreadable file: boom")])
    assert result.n_used == 60
    assert result.n_molecules == 63
    assert [s[0] for s in result.skipped] == ["bad.xyz", "single", "coincident"]
    assert "3 skipped" in result.summary()


def test_bad_config_and_too_few():
    with pytest.raises(ValueError, match="test_fraction"):
        AuditConfig(test_fraction=1.5)
    with pytest.raises(ValueError, match="at least 20"):
        audit_molecules(_aligned(10), CFG)
    with pytest.raises(ValueError, match="no molecule"):
        audit_molecules([Molecule([1], [[0.0, 0, 0]])], CFG)


def test_deterministic_under_seed():
    mols = _aligned(80)
    a, _ = audit_molecules(mols, CFG)
    b, _ = audit_molecules(mols, CFG)
    assert (a.auc, a.ci_low, a.p_value) == (b.auc, b.ci_low, b.p_value)
    np.testing.assert_equal(a.kinds, b.kinds)
