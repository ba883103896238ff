"""MesaNet blocks, LM, baselines (against their exact recurrences) and optimizer groups."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from conftest import make_inputs  # noqa: E402
from mesa_layer.reference import delta_rule_exact, gated_linear_attention_exact  # noqa: E402
from mesa_layer.torch import (  # noqa: E402
    DeltaNetLayer,
    GatedLinearAttentionLayer,
    MesaNetConfig,
    MesaNetLM,
    SoftmaxAttention,
    delta_rule,
    gated_linear_attention,
)
from mesa_layer.torch.model import MIXERS  # noqa: E402

from shared_core.testing import assert_close  # noqa: E402
from shared_core.train import TrainConfig, decay_groups, fit  # noqa: E402


def test_chunked_baselines_equal_their_recurrences():
    q, k, v, g, beta, _ = make_inputs(T=37)
    assert_close(
        "GLA",
        gated_linear_attention_exact(q, k, v, g, beta),
        gated_linear_attention(q, k, v, g, beta, 16),
        1e-12,
    )
    assert_close("DeltaNet", delta_rule_exact(q, k, v, beta), delta_rule(q, k, v, beta, 16), 1e-12)


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
    data = torch.full((4, 12), 3)
    res = fit(
        model, lambda m, b: m(b, b)[1], lambda step: data,
        TrainConfig(steps=15, lr=1e-2, schedule="constant", grad_clip=0.0), show_progress=False,
    )  # fmt: skip
    assert res.losses[-1] < 0.5 * res.losses[0]


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
    groups = decay_groups(model, 0.1)
    no_decay = {id(p) for p in groups[1]["params"]}
    layer = model.backbone.blocks[0].mixer
    assert id(layer.lambda_params) in no_decay and id(layer.a_proj.bias) in no_decay
    assert id(layer.q_proj.weight) not in no_decay


@pytest.mark.parametrize("layer", [GatedLinearAttentionLayer, DeltaNetLayer, SoftmaxAttention])
def test_baseline_layers_check_heads_and_input(layer):
    with pytest.raises(ValueError, match="num_heads: expected a divisor"):
        layer(32, 5)
    with pytest.raises(ValueError, match="num_heads: expected a positive int"):
        layer(32, 0)
    with pytest.raises(TypeError, match="x: dtype torch.float64 differs"):
        layer(32, 2)(torch.randn(1, 4, 32, dtype=torch.float64))
    with pytest.raises(ValueError, match="x: expected at least one"):
        layer(32, 2)(torch.randn(1, 0, 32))


@pytest.mark.parametrize("conv_size", [0, 4])
def test_softmax_attention_is_causal_with_and_without_short_conv(conv_size):
    torch.manual_seed(0)
    layer = SoftmaxAttention(32, 2, conv_size=conv_size)
    assert (layer.q_conv is None) == (conv_size == 0)
    x = torch.randn(2, 12, 32)
    x2 = x.clone()
    x2[:, 7:] = torch.randn(2, 5, 32)  # change the future only
    y, y2 = layer(x), layer(x2)
    assert torch.equal(y[:, :7], y2[:, :7]) and not torch.allclose(y[:, 7:], y2[:, 7:])


def test_softmax_attention_checks_conv_size():
    with pytest.raises(ValueError, match="conv_size: expected a non-negative int, got -1"):
        SoftmaxAttention(32, 2, conv_size=-1)
    with pytest.raises(ValueError, match="conv_size: expected a non-negative int, got 2.0"):
        SoftmaxAttention(32, 2, conv_size=2.0)  # type: ignore[arg-type]


def test_lm_rejects_bad_token_ids_and_targets():
    model = MesaNetLM(MesaNetConfig(vocab_size=11, hidden_size=16, intermediate_size=16))
    with pytest.raises(ValueError, match=r"idx: expected token ids in \[0, 11\).*max 11"):
        model(torch.tensor([[1, 11]]))
    with pytest.raises(ValueError, match="idx: expected token ids.*min -1"):
        model(torch.tensor([[-1, 2]]))
    with pytest.raises(TypeError, match="idx: expected integer token ids"):
        model(torch.rand(1, 4))
    with pytest.raises(ValueError, match="idx: expected at least one"):
        model(torch.zeros(1, 0, dtype=torch.long))
    with pytest.raises(ValueError, match="targets: expected the shape of idx"):
        model(torch.zeros(1, 4, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="targets: expected integer ids in"):
        model(torch.zeros(1, 2, dtype=torch.long), torch.tensor([[3, 12]]))


@pytest.mark.parametrize(
    "field,value", [("num_heads", 0), ("hidden_size", 0), ("vocab_size", 0), ("num_layers", 0),
                    ("chunk_size", 0), ("max_cg_steps_train", -1), ("attention_conv_size", -1)],
)  # fmt: skip
def test_bad_config_fields(field, value):
    with pytest.raises(ValueError, match=field):
        MesaNetConfig(**{field: value})


def test_bad_config():
    with pytest.raises(ValueError, match="mixer"):
        MesaNetConfig(mixer="mamba")
    with pytest.raises(ValueError, match="num_heads"):
        MesaNetConfig(hidden_size=30, num_heads=4)
    with pytest.raises(ValueError, match="idx"):
        MesaNetLM(MesaNetConfig(vocab_size=11, hidden_size=16, intermediate_size=16))(
            torch.zeros(3, dtype=torch.long)
        )
