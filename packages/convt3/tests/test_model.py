"""Frame predictors (torch): shapes, carried states, rollouts, parameter matching, checks."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from convt3.torch import (  # noqa: E402
    ConvSSMBlock,
    FramePredictor,
    PredictorConfig,
    convlstm_hidden_for,
    count_parameters,
)


@pytest.mark.parametrize("model", ["convt3", "convs5", "convlstm"])
def test_carried_states_continue_the_sequence_exactly(model):
    torch.manual_seed(0)
    net = FramePredictor(
        PredictorConfig(model=model, in_channels=2, d_model=4, state_size=8)
    ).double()
    frames = torch.randn(2, 9, 2, 6, 5, dtype=torch.float64)
    with torch.no_grad():
        whole = net(frames)
        first, states = net.run(frames[:, :4])
        second, _ = net.run(frames[:, 4:], states)
    assert whole.shape == (2, 9, 1, 6, 5)
    np.testing.assert_allclose(torch.cat([first, second], 1).numpy(), whole.numpy(), atol=1e-12)


def test_rollout_feeds_predictions_back_with_the_known_inputs():
    torch.manual_seed(1)
    net = FramePredictor(
        PredictorConfig(model="convt3", in_channels=2, d_model=4, state_size=8)
    ).double()
    context = torch.randn(1, 3, 2, 5, 5, dtype=torch.float64)
    forcing = torch.randn(1, 4, 1, 5, 5, dtype=torch.float64)
    out = net.rollout(context, 5, forcing)
    assert out.shape == (1, 5, 1, 5, 5)
    # the same closed loop written out by hand
    with torch.no_grad():
        seq = context
        for k in range(5):
            nxt = net(seq)[:, -1:]
            np.testing.assert_allclose(out[:, k : k + 1].numpy(), nxt.numpy(), atol=1e-10)
            if k < 4:
                seq = torch.cat([seq, torch.cat([nxt, forcing[:, k : k + 1]], 2)], 1)


def test_convlstm_is_matched_to_the_convt3_parameter_count():
    base = PredictorConfig(model="convt3", in_channels=2, d_model=8, state_size=16)
    target = count_parameters(FramePredictor(base))
    hidden = convlstm_hidden_for(target, base)
    from dataclasses import replace

    lstm = count_parameters(FramePredictor(replace(base, model="convlstm", state_size=hidden)))
    assert abs(lstm - target) / target < 0.15
    s5 = count_parameters(FramePredictor(replace(base, model="convs5")))
    assert target - s5 == 2 * 8 * 4  # 4 corner logits per complex state channel (P = 8), 2 layers


def test_block_keeps_shape_and_normalises_channels():
    block = ConvSSMBlock(4, 8, groups=2).double()
    u = torch.randn(2, 5, 4, 3, 3, dtype=torch.float64)
    out, state = block(u)
    assert out.shape == u.shape and state.shape == (2, 4, 3, 3)
    np.testing.assert_allclose(out.mean(2).detach().numpy(), 0.0, atol=1e-10)


def test_bad_configuration_and_input_raise_clearly():
    with pytest.raises(ValueError, match="model: expected one of"):
        FramePredictor(PredictorConfig(model="transformer"))
    with pytest.raises(ValueError, match="out_channels: expected <= in_channels"):
        FramePredictor(PredictorConfig(in_channels=1, out_channels=2))
    with pytest.raises(ValueError, match="d_model: expected an int >= 1"):
        FramePredictor(PredictorConfig(d_model=0))
    with pytest.raises(ValueError, match="groups: expected a divisor"):
        ConvSSMBlock(4, 8, groups=3)
    net = FramePredictor(PredictorConfig(in_channels=2))
    with pytest.raises(ValueError, match="expected 2 channels on axis 2"):
        net(torch.zeros(1, 3, 1, 4, 4))
    with pytest.raises(ValueError, match=r"frames: expected a tensor \(batch, time"):
        net(torch.zeros(3, 1, 4, 4))
    with pytest.raises(ValueError, match="inputs: expected"):
        net.rollout(torch.zeros(1, 3, 2, 4, 4), 3)
