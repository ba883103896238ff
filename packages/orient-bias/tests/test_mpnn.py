from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from orient_bias.detect import DetectConfig, perturb, score_detector, train_detector  # noqa: E402
from orient_bias.frames import pad, principal_frames  # noqa: E402
from orient_bias.mpnn import RotationVariantMPNN  # noqa: E402
from orient_bias.rotations import random_rotations  # noqa: E402

from shared_core.data import Molecule  # noqa: E402


def _batch(n: int = 6, atoms: int = 9, seed: int = 0):
    rng = np.random.default_rng(seed)
    z = torch.as_tensor(rng.choice([1, 6, 7, 8, 9], size=(n, atoms)))
    z[0, -3:] = 0  # one padded molecule
    x = torch.as_tensor(rng.normal(size=(n, atoms, 3)) * [2.0, 1.3, 0.8], dtype=torch.float32)
    x = x * (z > 0).unsqueeze(-1)
    bonds = torch.as_tensor(rng.integers(0, 5, size=(n, atoms, atoms)))
    bonds = torch.triu(bonds, 1)
    bonds = (bonds + bonds.transpose(1, 2)) * (z[:, :, None] > 0) * (z[:, None, :] > 0)
    return x, z, bonds


def _model(seed: int = 0) -> RotationVariantMPNN:
    torch.manual_seed(seed)
    m = RotationVariantMPNN()
    # move the LayerNorm and head off their initial values so differences are not tiny
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()


def test_parameter_count_is_the_papers_238():
    assert sum(p.numel() for p in RotationVariantMPNN().parameters()) == 238


def test_shape_and_padding_do_not_change_the_logit():
    m = _model()
    x, z, b = _batch()
    out = m(x, z, b)
    assert out.shape == (6, 1) and torch.isfinite(out).all()
    # the padded atoms of molecule 0 carry no information: move them, the logit stays
    x2 = x.clone()
    x2[0, -3:] = 50.0
    torch.testing.assert_close(m(x2, z, b)[0], out[0])
    # extra padding columns change nothing either
    pad_x = torch.cat([x, torch.zeros(6, 2, 3)], 1)
    pad_z = torch.cat([z, torch.zeros(6, 2, dtype=z.dtype)], 1)
    pad_b = torch.nn.functional.pad(b, (0, 2, 0, 2))
    torch.testing.assert_close(m(pad_x, pad_z, pad_b), out, atol=1e-5, rtol=1e-5)


def test_translation_invariant_but_rotation_variant():
    m = _model()
    x, z, b = _batch()
    out = m(x, z, b)
    shift = torch.tensor([3.0, -1.0, 7.5]) * (z > 0).unsqueeze(-1)
    torch.testing.assert_close(m(x + shift, z, b), out, atol=1e-4, rtol=1e-4)
    R = torch.as_tensor(random_rotations(1, 3)[0], dtype=torch.float32)
    rotated = m(x @ R.T, z, b)
    assert (rotated - out).abs().max() > 1e-2  # sees the orientation
    # and only through directions: a permutation of the atoms changes nothing
    perm = torch.tensor([2, 0, 1, 3, 4, 5, 6, 7, 8])
    xp, zp, bp = x[1:, perm], z[1:, perm], b[1:][:, perm][:, :, perm]
    torch.testing.assert_close(m(xp, zp, bp), out[1:], atol=1e-4, rtol=1e-4)


def test_deterministic_and_batch_independent_in_eval():
    x, z, b = _batch()
    a, c = _model(1)(x, z, b), _model(1)(x, z, b)
    torch.testing.assert_close(a, c, atol=0, rtol=0)
    torch.testing.assert_close(_model(1)(x[2:3], z[2:3], b[2:3]), a[2:3], atol=1e-5, rtol=1e-5)


def test_bad_input():
    m = RotationVariantMPNN()
    x, z, b = _batch()
    with pytest.raises(ValueError, match="positions: expected"):
        m(x[..., :2], z, b)
    with pytest.raises(ValueError, match="bonds: expected"):
        m(x, z, b[:, :3])
    with pytest.raises(TypeError, match="positions: expected dtype"):
        m(x.double(), z, b)
    with pytest.raises(TypeError, match="numbers: expected an integer"):
        m(x, z.float(), b)
    z2 = z.clone()
    z2[1, 0] = 16
    with pytest.raises(ValueError, match="element 16"):
        m(x, z2, b)
    with pytest.raises(ValueError, match="bonds: expected codes"):
        m(x, z, b + 5)
    x2 = x.clone()
    x2[1, 1, 1] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        m(x2, z, b)
    with pytest.raises(ValueError, match="width"):
        RotationVariantMPNN(width=0)
    with pytest.raises(ValueError, match="cutoff"):
        RotationVariantMPNN(cutoff=-1.0)
    with pytest.raises(ValueError, match="noise"):
        DetectConfig(noise=-0.1)
    with pytest.raises(ValueError, match="pre_rotation"):
        DetectConfig(pre_rotation=200)


def test_perturb_centres_and_rotates_only_flagged_rows():
    x, z, _ = _batch()
    pos, mask = x.double().numpy() + 4.0, z.numpy() > 0
    rot = np.array([True, False, True, False, False, True])
    out = perturb(pos, mask, 0.0, 0.0, rot, np.random.default_rng(0))
    np.testing.assert_allclose((out * mask[..., None]).sum(1), 0, atol=1e-10)
    c = (pos * mask[..., None]).sum(1) / mask.sum(1)[:, None]
    centred = (pos - c[:, None]) * mask[..., None]
    np.testing.assert_allclose(out[~rot], centred[~rot], atol=1e-12)
    assert np.abs(out[rot] - centred[rot]).max() > 0.1
    # rotations keep all interatomic distances; noise does not
    d = np.linalg.norm(out[:, :, None] - out[:, None], axis=-1)
    np.testing.assert_allclose(
        d, np.linalg.norm(centred[:, :, None] - centred[:, None], axis=-1), atol=1e-9
    )
    noisy = perturb(pos, mask, 1.0, 90.0, rot, np.random.default_rng(0))
    assert np.abs(noisy - out).max() > 0.5 and np.all(noisy[~mask] == 0)


def test_detector_learns_planted_alignment():
    """Molecules in their canonical principal frame (perfect alignment): the paper's network,
    trained by `train_detector`, tells them from rotated copies; the pre-rotated control
    cannot be told apart."""
    rng = np.random.default_rng(0)
    mols = []
    for _ in range(240):
        x = rng.normal(size=(7, 3)) * np.array([2.2, 1.2, 0.5])
        mols.append(Molecule(rng.choice([1, 6, 7, 8], 7), x))
    poses = pad(mols)
    aligned = pad([
        Molecule(m.numbers, principal_frames(poses).canonical(poses)[b, : len(m)])
        for b, m in enumerate(mols)
    ])  # fmt: skip
    bonds = np.zeros((240, 7, 7), dtype=np.int8)
    cfg = DetectConfig(epochs=150, batch_size=32, seed=0)
    tr, te = aligned.subset(slice(0, 180)), aligned.subset(slice(180, 240))
    model = train_detector(tr, bonds[:180], cfg)
    s0, s1 = score_detector(model, te, bonds[180:], cfg, seed=1)
    from orient_bias.classifiers import pair_auc

    assert pair_auc(s0, s1) > 0.75
