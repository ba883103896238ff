from __future__ import annotations

import numpy as np
import pytest
import torch
from orient_bias.model import OrientationMLP, PointCloudNet
from orient_bias.rotations import random_rotations
from orient_bias.train import TrainConfig, predict, train


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
