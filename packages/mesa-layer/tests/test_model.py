"""MesaNet blocks, LM, baselines (against their exact recurrences) and optimizer groups."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from conftest import make_inputs  # noqa: E402
from mesa_layer.reference import delta_rule_exact, gated_linear_attention_exact  # noqa: E402
from mesa_layer.torch import (  # noqa: E402
    MesaNetConfig,
    MesaNetLM,
    delta_rule,
    gated_linear_attention,
    param_groups,
)
from mesa_layer.torch.model import MIXERS  # noqa: E402


def test_chunked_baselines_equal_their_recurrences():
    q, k, v, g, beta, _ = make_inputs(T=37)
    torch.testing.assert_close(
        gated_linear_attention(q, k, v, g, beta, 16),
        gated_linear_attention_exact(q, k, v, g, beta),
        atol=1e-12,
        rtol=0,
    )
    torch.testing.assert_close(
        delta_rule(q, k, v, beta, 16), delta_rule_exact(q, k, v, beta), atol=1e-12, rtol=0
    )


@pytest.mark.parametrize("mixer", MIXERS)
def test_lm_is_causal_and_trains(mixer):
    torch.manual_seed(0)
    cfg = MesaNetConfig(
        vocab_size=17,
        hidden_size=16,
        num_heads=2,
        intermediate_size=32,
        mixer=mixer,
        max_cg_steps_train=8,
    )
    model = MesaNetLM(cfg)
    idx = torch.randint(0, 17, (2, 12))
    idx2 = idx.clone()
    idx2[:, 8:] = (idx2[:, 8:] + 1) % 17
    torch.testing.assert_close(model(idx)[0][:, :8], model(idx2)[0][:, :8], atol=1e-5, rtol=0)
    # planted signal: a constant sequence is learnable in a few steps
    opt = torch.optim.AdamW(param_groups(model, 0.1), lr=1e-2)
    data = torch.full((4, 12), 3)
    losses = []
    for _ in range(15):
        _, loss = model(data, data)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_ignore_index_and_shapes():
    model = MesaNetLM(
        MesaNetConfig(
            vocab_size=11, hidden_size=16, num_heads=2, intermediate_size=16, max_cg_steps_train=4
        )
    )
    idx = torch.randint(0, 11, (2, 5))
    tgt = torch.full((2, 5), -100)
    tgt[:, 2] = 4
    logits, loss = model(idx, tgt)
    assert logits.shape == (2, 5, 11)
    expect = torch.nn.functional.cross_entropy(logits[:, 2], tgt[:, 2])
    torch.testing.assert_close(loss, expect)


def test_no_weight_decay_on_lambda_biases_and_norms():
    model = MesaNetLM(
        MesaNetConfig(vocab_size=11, hidden_size=16, num_heads=2, intermediate_size=16)
    )
    groups = param_groups(model, 0.1)
    no_decay = {id(p) for p in groups[1]["params"]}
    layer = model.backbone.blocks[0].mixer
    assert id(layer.lambda_params) in no_decay and id(layer.a_proj.bias) in no_decay
    assert id(layer.q_proj.weight) not in no_decay


def test_bad_config():
    with pytest.raises(ValueError, match="mixer"):
        MesaNetConfig(mixer="mamba")
    with pytest.raises(ValueError, match="num_heads"):
        MesaNetConfig(hidden_size=30, num_heads=4)
    with pytest.raises(ValueError, match="idx"):
        MesaNetLM(MesaNetConfig(vocab_size=11, hidden_size=16, intermediate_size=16))(
            torch.zeros(3, dtype=torch.long)
        )
