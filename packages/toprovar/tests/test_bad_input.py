"""Bad input to the public API, in one table: each case raises a ValueError/TypeError naming
the argument (issue 46's probes: NaN queries gave NaN outputs and entropies, and a FastVAR
policy naming scale 7 of a 3-scale model was ignored)."""

from __future__ import annotations

import pytest
import torch
from toprovar.entropy import attention_with_entropy
from toprovar.generation import generate
from toprovar.model import TinyVAR
from toprovar.pruning import FastVARPolicy
from toprovar.vq import MultiScaleVQ

from shared_core.testing import assert_bad_input

torch.manual_seed(0)
_Q = torch.randn(1, 2, 4, 8)
_NAN = _Q.clone()
_NAN[0, 1, 2, 3] = float("nan")
_INF = _Q.clone()
_INF[0, 0, 0, 0] = float("inf")
_VQ = MultiScaleVQ(hidden=8, latent=8, vocab=16, scales=(1, 2, 4), downsample=2).eval()
_VAR = TinyVAR(vocab=16, latent=8, scales=(1, 2, 4), num_classes=3, dim=32, depth=2, heads=2)
_LABELS = torch.tensor([0, 1])

CASES = {
    "NaN query": (lambda: attention_with_entropy(_NAN, _Q, _Q), ValueError, "q"),
    "inf key": (lambda: attention_with_entropy(_Q, _INF, _Q), ValueError, "k"),
    "NaN value": (lambda: attention_with_entropy(_Q, _Q, _NAN), ValueError, "v"),
    "no queries": (lambda: attention_with_entropy(_Q[:, :, :0], _Q, _Q), ValueError, "q, k, v"),
    "no keys": (lambda: attention_with_entropy(_Q, _Q[:, :, :0], _Q[:, :, :0]), ValueError, "k"),
    "integer query": (lambda: attention_with_entropy(_Q.long(), _Q, _Q), TypeError, "q"),
    "policy names a missing scale": (
        lambda: generate(_VAR, _VQ, _LABELS, FastVARPolicy({7: 0.5})),
        ValueError,
        "drop",
    ),
    "policy prunes scale 0": (lambda: FastVARPolicy({0: 0.5}), ValueError, "drop"),
    "drop ratio 1": (lambda: FastVARPolicy({1: 1.0}), ValueError, "drop[1]"),
    "unknown attention method": (
        lambda: generate(_VAR, _VQ, _LABELS, attention="flash"),
        ValueError,
        "attention",
    ),
    "label out of range": (
        lambda: generate(_VAR, _VQ, torch.tensor([5]), None),
        ValueError,
        "labels",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])
