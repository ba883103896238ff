from __future__ import annotations

import numpy as np
import pytest
import torch
from orient_bias.model import OrientationMLP, PointCloudNet
from orient_bias.rotations import random_rotations
from orient_bias.training import TrainConfig, predict, train


def test_point_cloud_net_is_permutation_invariant_not_rotation_invariant():
    torch.manual_seed(0)
    net = PointCloudNet(hidden=16).double()
    x = torch.randn(2, 5, 3, dtype=torch.float64)
    z = torch.tensor([[6, 1, 1, 8, 0], [6, 6, 1, 0, 0]])
    out = net(x, z)
    assert out.shape == (2, 1)
    perm = torch.tensor([3, 0, 2, 1, 4])
    torch.testing.assert_close(net(x[:, perm], z[:, perm]), out)
    # padding rows do not matter
    x2 = x.clone()
    x2[z == 0] = 99.0
    torch.testing.assert_close(net(x2, z), out)
    R = torch.as_tensor(random_rotations(2, 0))
    assert not torch.allclose(net(torch.einsum("bij,bnj->bni", R, x), z), out)


def test_gradients_flow_and_shapes_are_checked():
    net = PointCloudNet(hidden=8)
    x = torch.randn(3, 4, 3, requires_grad=True)
    net(x, torch.ones(3, 4, dtype=torch.long)).sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    with pytest.raises(ValueError, match="numbers: expected"):
        net(torch.randn(3, 4, 3), torch.ones(3, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="x: expected"):
        OrientationMLP()(torch.randn(3, 5))


def test_training_recovers_planted_signal_and_is_deterministic():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(512, 6)).astype(np.float32)
    y = (X[:, :1] * 2 - X[:, 1:2]).astype(np.float32)
    cfg = TrainConfig(epochs=15, batch_size=64, lr=3e-3, warmup_epochs=1)
    torch.manual_seed(0)
    a, hist = train(OrientationMLP(hidden=32, depth=2), (X,), y, torch.nn.functional.mse_loss, cfg)
    assert hist[-1] < 0.1 * hist[0]
    torch.manual_seed(0)
    b, hist_b = train(
        OrientationMLP(hidden=32, depth=2), (X,), y, torch.nn.functional.mse_loss, cfg
    )
    assert hist == hist_b
    np.testing.assert_array_equal(predict(a, (X,)), predict(b, (X,)))


def test_training_resumes_from_checkpoint_to_the_same_weights(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 6)).astype(np.float32)
    y = X[:, :1].astype(np.float32)
    cfg = TrainConfig(epochs=4, batch_size=64, lr=3e-3, warmup_epochs=1)
    torch.manual_seed(0)
    full, _ = train(OrientationMLP(hidden=16, depth=2), (X,), y, torch.nn.functional.mse_loss, cfg)
    # interrupted after 2 of 4 epochs, then resumed from the checkpoint
    ckpt = str(tmp_path / "mlp.safetensors")
    from orient_bias.training import epoch_batches

    from shared_core.train import fit

    torch.manual_seed(0)
    m = OrientationMLP(hidden=16, depth=2)
    arrays = (torch.as_tensor(X), torch.as_tensor(y))
    fc = cfg.fit_config(len(X))
    # on cfg.device ("cpu"), where train() trained `full`: fit's "auto" would pick a GPU
    fit(m, lambda net, b: torch.nn.functional.mse_loss(net(b[0]), b[1]),
        epoch_batches(arrays, 64, cfg.seed), fc, checkpoint=ckpt, stop_at=2 * 4,
        show_progress=False, device=cfg.device)  # fmt: skip
    m2 = OrientationMLP(hidden=16, depth=2)
    fit(m2, lambda net, b: torch.nn.functional.mse_loss(net(b[0]), b[1]),
        epoch_batches(arrays, 64, cfg.seed), fc, checkpoint=ckpt, show_progress=False,
        device=cfg.device)  # fmt: skip
    for a, b in zip(full.parameters(), m2.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert fc.steps == 16 and fc.warmup == 4  # 4 epochs of 4 batches, 1 warm-up epoch


def test_model_input_checks():
    net = PointCloudNet(hidden=8)
    x, z = torch.randn(2, 3, 3), torch.ones(2, 3, dtype=torch.long)
    with pytest.raises(TypeError, match="positions: expected dtype torch.float32"):
        net(x.double(), z)
    with pytest.raises(TypeError, match="numbers: expected integer"):
        net(x, z.float())
    with pytest.raises(ValueError, match="numbers: expected atomic numbers in 0..118"):
        net(x, z * 200)
    with pytest.raises(TypeError, match="x: expected dtype"):
        OrientationMLP()(torch.randn(3, 6, dtype=torch.float64))


def test_train_config_validation():
    with pytest.raises(ValueError, match="epochs"):
        TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="lr"):
        TrainConfig(lr=-1.0)
    with pytest.raises(ValueError, match="inputs"):
        train(
            OrientationMLP(),
            (np.zeros((3, 6), np.float32),),
            np.zeros((4, 1), np.float32),
            torch.nn.functional.mse_loss,
        )
    with pytest.raises(ValueError, match="target: expected at least one row"):
        train(OrientationMLP(), (np.zeros((0, 6), np.float32),), np.zeros((0, 1), np.float32),
              torch.nn.functional.mse_loss)  # fmt: skip
    with pytest.raises(ValueError, match=r"inputs\[0\]: contains NaN"):
        train(OrientationMLP(), (np.full((3, 6), np.nan, np.float32),), np.zeros((3, 1), np.float32),
              torch.nn.functional.mse_loss)  # fmt: skip
    with pytest.raises(ValueError, match="batch_size"):
        TrainConfig(batch_size=0)
    with pytest.raises(ValueError, match="grad_clip"):
        TrainConfig(grad_clip=-1.0)
