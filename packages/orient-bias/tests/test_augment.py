from __future__ import annotations

import numpy as np
import pytest
import torch
from orient_bias.augment import RandomRotation, RotatedDataset
from orient_bias.rotations import haar_angle_cdf, rotation_angle
from scipy.stats import kstest


def test_single_and_batched_preserve_geometry():
    g = torch.Generator().manual_seed(0)
    t = RandomRotation(generator=g)
    x = torch.randn(7, 3, dtype=torch.float64)
    y = t(x)
    assert y.shape == x.shape and y.dtype == x.dtype
    np.testing.assert_allclose(torch.cdist(y, y).numpy(), torch.cdist(x, x).numpy(), atol=1e-10)
    np.testing.assert_allclose(y.mean(0).numpy(), 0, atol=1e-12)  # centred
    xb = torch.randn(4, 5, 3, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 0, 0]] * 4, dtype=torch.bool)
    xb[~mask] = 0
    out, R = t.rotate(xb, mask)
    assert R.shape == (4, 3, 3)
    assert torch.all(out[~mask] == 0)
    c = xb[:, :3] - xb[:, :3].mean(1, keepdim=True)
    torch.testing.assert_close(out[:, :3], torch.einsum("bij,bnj->bni", R, c))


def test_mapping_rotates_vectors_consistently_and_rotations_are_haar():
    t = RandomRotation(
        vector_keys=("forces",), centre=False, generator=torch.Generator().manual_seed(1)
    )
    x = torch.randn(6, 3, dtype=torch.float64)
    s = t({"positions": x, "forces": x.clone(), "energy": 1.0})
    torch.testing.assert_close(s["positions"], s["forces"])
    assert s["energy"] == 1.0
    angles = [float(rotation_angle(t.rotate(x)[1])) for _ in range(3000)]
    assert kstest(angles, haar_angle_cdf).pvalue > 0.01


def test_dataset_wrapper_and_bad_input():
    base = [torch.randn(4, 3) for _ in range(3)]
    ds = RotatedDataset(base, RandomRotation(generator=torch.Generator().manual_seed(0)))
    assert len(ds) == 3 and ds[0].shape == (4, 3)
    with pytest.raises(ValueError, match="positions: expected"):
        RandomRotation()(torch.randn(4, 2))
    with pytest.raises(ValueError, match="sample: expected a 'positions' entry"):
        RandomRotation()({"pos": torch.randn(4, 3)})


@pytest.mark.parametrize(
    ("dtype", "ratio"), [("float64", 1e-12), ("float32", 1e-6), ("bfloat16", 2e-2)]
)
def test_rotation_on_device_matches_float64_reference(device, dtype, ratio):
    from shared_core.testing import assert_close

    x = torch.randn(8, 6, 3, dtype=torch.float64)
    mask = torch.ones(8, 6, dtype=torch.bool)
    mask[:, 4:] = False
    x[~mask] = 0
    t = RandomRotation(generator=torch.Generator().manual_seed(0))
    out, R = t.rotate(x.to(device=device, dtype=getattr(torch, dtype)), mask.to(device))
    # reference: centre over the real atoms, rotate by the same R, in float64 on the CPU
    R64 = R.detach().cpu().double()
    c = (x * mask[..., None]).sum(1, keepdim=True) / mask.sum(1)[:, None, None]
    ref = torch.einsum("bij,bnj->bni", R64, (x - c) * mask[..., None])
    assert_close(f"RandomRotation {dtype}", ref, out, ratio)


def test_rotate_checks_mask_and_dtype():
    t = RandomRotation()
    with pytest.raises(ValueError, match="mask: expected shape"):
        t.rotate(torch.randn(2, 5, 3), torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="positions: expected a floating-point"):
        t.rotate(torch.ones(5, 3, dtype=torch.long))
