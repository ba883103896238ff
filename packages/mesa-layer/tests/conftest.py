"""Shared random inputs for the Mesa op tests."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def make_inputs(B=2, T=37, H=2, K=8, V=6, dtype=torch.float64, seed=0, gate_bias=2.0):
    """L2-normalised q, k; random v; log gate g <= 0; beta in (0, 1); Lambda >= 0.25."""
    gen = torch.Generator().manual_seed(seed)
    F = torch.nn.functional

    def rnd(*s):
        return torch.randn(*s, generator=gen, dtype=dtype)

    q = F.normalize(rnd(B, T, H, K), dim=-1)
    k = F.normalize(rnd(B, T, H, K), dim=-1)
    v = rnd(B, T, H, V)
    g = F.logsigmoid(rnd(B, T, H) + gate_bias)
    beta = torch.sigmoid(rnd(B, T, H))
    Lambda = torch.rand(H, K, generator=gen, dtype=dtype) + 0.25
    return q, k, v, g, beta, Lambda


@pytest.fixture
def inputs64():
    return make_inputs()


# The tests run many tiny ops; intra-op threads cost more than they give on a shared CPU.
torch.set_num_threads(1)
