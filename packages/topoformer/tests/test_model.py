"""TopoFormer: the authors' module layout, shapes, fusion weights, errors, learning."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from topoformer.model import TopoFormer, TopoFormerConfig, TopoSequenceEncoder
from torch import nn

from shared_core.testing import assert_close


class AuthorsEncoder(nn.Module):
    """The authors' ``TransformerClassifier`` (models.py), written as they wrote it."""

    def __init__(self, t: int, d: int, heads: int, layers: int) -> None:
        super().__init__()
        self.embedding = nn.Linear(4, d)
        self.positional_encoding = nn.Parameter(torch.zeros(1, t, d))
        self.transformer = nn.Transformer(d_model=d, nhead=heads, num_encoder_layers=layers,
                                          num_decoder_layers=layers)  # fmt: skip
        self.fc = nn.Linear(d * t, d)
        self.bn = nn.BatchNorm1d(d * t)

    def forward(self, src: torch.Tensor) -> torch.Tensor:
        e = self.embedding(src) + self.positional_encoding[:, : src.size(1), :]
        out = self.transformer.encoder(e.permute(1, 0, 2))
        return self.fc(self.bn(out.permute(1, 0, 2).contiguous().view(src.size(0), -1)))


def test_encoder_equals_the_authors_module(device):
    torch.manual_seed(0)
    t, d = 7, 16
    theirs = AuthorsEncoder(t, d, 2, 2).double().eval()
    ours = TopoSequenceEncoder(t, TopoFormerConfig(d_model=d)).double().eval()
    sd = theirs.state_dict()
    mapped = {"embedding.weight": sd["embedding.weight"], "embedding.bias": sd["embedding.bias"],
              "positional": torch.randn_like(sd["positional_encoding"])}  # fmt: skip
    with torch.no_grad():
        theirs.positional_encoding.copy_(mapped["positional"])
    for k, v in sd.items():
        if k.startswith("transformer.encoder."):
            mapped[k.replace("transformer.encoder.", "encoder.")] = v
        elif k.startswith(("fc.", "bn.")):
            mapped[k] = v
    ours.load_state_dict(mapped)
    x = torch.randn(5, t, 4, dtype=torch.float64) * 3
    ref = theirs(x)
    assert_close("encoder fp64", ref, ours(x), 1e-12)
    fast = ours.float().to(device)(x.float().to(device))
    assert_close("encoder fp32", ref, fast.double().cpu(), 1e-5)


def test_shapes_and_fusion_weights():
    model = TopoFormer([19, 5], 2, TopoFormerConfig(d_model=16))
    c = model.mixing_weights()
    assert torch.allclose(c, torch.tensor([0.5, 0.5]))
    out = model([torch.randn(8, 19, 4), torch.randn(8, 5, 4)])
    assert out.shape == (8, 2)
    three = TopoFormer([6, 6], 1, TopoFormerConfig(d_model=8), extra_features=12)
    assert torch.allclose(three.mixing_weights().sum(), torch.tensor(1.0))
    assert three([torch.randn(4, 6, 4)] * 2, torch.randn(4, 12)).shape == (4, 1)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="n_heads"):
        TopoFormerConfig(d_model=10, n_heads=3)
    with pytest.raises(ValueError, match="dropout"):
        TopoFormerConfig(dropout=1.0)
    with pytest.raises(ValueError, match="num_tokens"):
        TopoFormer([], 2)
    with pytest.raises(ValueError, match="num_outputs"):
        TopoFormer([3], 0)
    model = TopoFormer([5], 2, TopoFormerConfig(d_model=8))
    with pytest.raises(ValueError, match=r"tokens: expected shape \(batch, 5, 4\)"):
        model([torch.randn(2, 4, 4)])
    with pytest.raises(ValueError, match="sequences: expected 1"):
        model([torch.randn(2, 5, 4)] * 2)
    with pytest.raises(ValueError, match="no extra branch"):
        model([torch.randn(2, 5, 4)], torch.randn(2, 3))


def test_learns_a_planted_topological_signal():
    """Class 1 graphs have two components in slices 3-5: TopoFormer must find it."""
    from topoformer.experiments.common import FoldSplit, Task, TrainSettings, topoformer_fold

    rng = np.random.default_rng(0)
    n = 96
    y = rng.integers(0, 2, n)
    x = rng.integers(1, 4, size=(n, 8, 4)).astype(float)
    x[y == 1, 3:6, 0] += 2.0
    split = FoldSplit(np.arange(64), np.arange(64, 80), np.arange(80, 96), seed=0)
    sel, curve = topoformer_fold(
        [x], Task(y), split, TrainSettings(epochs=15, batch_size=16),
        TopoFormerConfig(d_model=16, dim_feedforward=32, n_layers=1), "cpu",
    )  # fmt: skip
    assert len(curve) == 15
    assert sel.honest >= 0.85


def test_a_batch_of_one_in_train_mode_is_a_clear_error():
    model = TopoFormer([5, 7], 2, TopoFormerConfig(d_model=8, dim_feedforward=16))
    x = [torch.rand(1, 5, 4), torch.rand(1, 7, 4)]
    with pytest.raises(ValueError, match="batch of 1 graph"):
        model(x)
    with pytest.raises(ValueError, match="batch of 1 graph"):
        model.encoders[0](x[0])
    model.eval()
    assert model(x).shape == (1, 2)  # predicting one graph is fine
