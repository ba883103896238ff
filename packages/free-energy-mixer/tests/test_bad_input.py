"""Bad input to the public API, in one table: each case raises a ValueError/TypeError naming
the argument (issue 46's probes: float64 input to a float32 layer raised torch's "mat1 and mat2
must have the same dtype", `beta` had to be an (H, d_v) tensor, and the clip cap bounds values
at cap / beta once beta grows)."""

from __future__ import annotations

import pytest
import torch
from free_energy_mixer import (
    CausalLM,
    FEMAttention,
    FEMConfig,
    LMConfig,
    clip_values,
    decay_scan,
    free_energy_read,
    softmax_prior,
)

from shared_core.testing import assert_bad_input

torch.manual_seed(0)
_CFG = FEMConfig(d_model=32, num_heads=2, tdc_hidden=8)
_FEM = FEMAttention(_CFG)
_X = torch.randn(2, 5, 32)
_LM = CausalLM(LMConfig(vocab_size=11, d_model=16, num_heads=2, tdc_hidden=4))
_Q = torch.randn(1, 2, 4, 8)
_V = torch.randn(1, 2, 4, 3)
_NAN_V = _V.clone()
_NAN_V[0, 0, 0, 0] = float("nan")

CASES = {
    # FEMAttention
    "float64 input to a float32 layer": (lambda: _FEM(_X.double()), TypeError, "x", "float64"),
    "integer input": (lambda: _FEM(_X.long()), TypeError, "x"),
    "NaN input": (lambda: _FEM(_X * float("nan")), ValueError, "x"),
    "inf input": (lambda: _FEM(_X * float("inf")), ValueError, "x"),
    "empty sequence": (lambda: _FEM(torch.zeros(2, 0, 32)), ValueError, "x"),
    "wrong width": (lambda: _FEM(torch.zeros(2, 5, 31)), ValueError, "x", "31"),
    "2-D input": (lambda: _FEM(torch.zeros(5, 32)), ValueError, "x"),
    "a list as input": (lambda: _FEM([[0.0] * 32]), TypeError, "x"),
    "layer from a dict": (lambda: FEMAttention({"d_model": 32}), TypeError, "config"),
    # FEMConfig / LMConfig
    "unknown prior": (lambda: FEMConfig(32, 2, prior="zzz"), ValueError, "prior", "zzz"),
    "zero heads": (lambda: FEMConfig(32, 0), ValueError, "num_heads"),
    "NaN beta_init": (lambda: FEMConfig(32, 2, beta_init=float("nan")), ValueError, "beta_init"),
    "negative cap": (lambda: FEMConfig(32, 2, value_cap=-1.0), ValueError, "value_cap"),
    "unknown mixer": (lambda: LMConfig(11, mixer="zzz"), ValueError, "mixer"),
    "zero vocabulary": (lambda: LMConfig(0), ValueError, "vocab_size"),
    # CausalLM
    "float ids": (lambda: _LM(torch.zeros(1, 4)), TypeError, "ids"),
    "id out of the vocabulary": (lambda: _LM(torch.tensor([[1, 11]])), ValueError, "ids", "11"),
    "negative id": (lambda: _LM(torch.tensor([[-1, 2]])), ValueError, "ids"),
    "labels of another shape": (
        lambda: _LM(torch.tensor([[1, 2]]), labels=torch.tensor([[1, 2, 3]])),
        ValueError,
        "labels",
    ),
    # the free-energy read
    "NaN values": (lambda: free_energy_read(softmax_prior, _Q, _Q, _NAN_V, 1.0), ValueError, "v"),
    "integer values": (
        lambda: free_energy_read(softmax_prior, _Q, _Q, _V.long(), 1.0),
        TypeError,
        "v",
    ),
    "q of another dtype": (
        lambda: free_energy_read(softmax_prior, _Q.double(), _Q, _V, 1.0),
        TypeError,
        "q",
    ),
    "q of another length": (
        lambda: free_energy_read(softmax_prior, _Q[:, :, :3], _Q[:, :, :3], _V, 1.0),
        ValueError,
        "q",
    ),
    "beta of the wrong shape": (
        lambda: free_energy_read(softmax_prior, _Q, _Q, _V, torch.ones(3, 3)),
        ValueError,
        "beta",
    ),
    "zero beta": (lambda: free_energy_read(softmax_prior, _Q, _Q, _V, 0.0), ValueError, "beta"),
    "NaN beta": (
        lambda: free_energy_read(softmax_prior, _Q, _Q, _V, float("nan")),
        ValueError,
        "beta",
    ),
    "beta as a string": (
        lambda: free_energy_read(softmax_prior, _Q, _Q, _V, "1"),
        ValueError,
        "beta",
    ),
    "zero cap": (
        lambda: free_energy_read(softmax_prior, _Q, _Q, _V, 1.0, cap=0.0),
        ValueError,
        "cap",
    ),
    "prior of the wrong width": (
        lambda: free_energy_read(lambda q, k, v: v[..., :1], _Q, _Q, _V, 1.0),
        ValueError,
        "prior",
    ),
    "clip with beta of the wrong shape": (
        lambda: clip_values(_V, torch.ones(5)),
        ValueError,
        "beta",
    ),
    "clip with zero cap": (lambda: clip_values(_V, torch.ones(2, 3), 0.0), ValueError, "cap"),
    # the decay scan
    "decay scan of NaN": (
        lambda: decay_scan(torch.full((1, 4, 3), float("nan")), torch.ones(1, 4, 3)),
        ValueError,
        "log_decay",
    ),
    "decay scan of positive log decay": (
        lambda: decay_scan(torch.ones(1, 4, 3), torch.ones(1, 4, 3)),
        ValueError,
        "log_decay",
    ),
    "decay scan of mismatched shapes": (
        lambda: decay_scan(-torch.ones(1, 4, 3), torch.ones(1, 5, 3)),
        ValueError,
        "u",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])


def test_scalar_beta_is_one_temperature() -> None:
    """Issue 46: `beta` had to be an (H, d_v) tensor; a float is one temperature everywhere."""
    a = free_energy_read(softmax_prior, _Q, _Q, _V, 2.0)
    b = free_energy_read(softmax_prior, _Q, _Q, _V, torch.full((2, 3), 2.0))
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=0)


def test_clip_bounds_at_cap_over_beta() -> None:
    """Issue 46: the clip bounds every read value at cap / beta (documented, tested here)."""
    out = clip_values(torch.full((1, 2, 1, 3), 10.0), torch.full((2, 3), 8.0), cap=40.0)
    assert float(out.max()) == 5.0
