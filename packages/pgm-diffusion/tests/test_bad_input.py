"""Bad input to the public API, in one table (issue 46's probe categories: NaN/inf, empty,
shapes, dtypes, ids/sizes/names, types): each case raises a ValueError/TypeError naming the
argument."""

from __future__ import annotations

import pytest
import torch
from masked_diffusion import LogLinearSchedule
from pgm import (
    PartitionTransformer,
    PGMConfig,
    as_denoiser,
    check_groups,
    masked_attention,
    partition_terms,
    pgm_confidence_sample,
    pgm_loss,
    pgm_nelbo,
    pgm_ordered_sample,
)

from shared_core.testing import assert_bad_input

torch.manual_seed(0)
V, L = 5, 6
_CFG = PGMConfig(V, L, d_model=16, n_heads=2, n_encoder=1, n_decoder=1)
_NET = PartitionTransformer(_CFG)
_S = LogLinearSchedule()
_X = torch.randint(0, V, (3, L))
_G = torch.rand(3, L) < 0.5
_T = torch.full((3,), 0.5)
_NAN_T = torch.tensor([0.5, float("nan"), 0.2])
_BIG_X = _X.clone()
_BIG_X[0, 0] = V
_QKV = torch.randn(2, 2, 4, 8)

CASES = {
    # config: sizes, names
    "zero vocabulary": (lambda: PGMConfig(0, L), ValueError, "vocab_size", "0"),
    "heads not dividing d_model": (
        lambda: PGMConfig(V, L, d_model=16, n_heads=3),
        ValueError,
        "n_heads",
    ),
    "unknown pre_query": (lambda: PGMConfig(V, L, pre_query="zzz"), ValueError, "pre_query", "zzz"),
    "unknown query_proj": (
        lambda: PGMConfig(V, L, query_proj="zzz"),
        ValueError,
        "query_proj",
        "zzz",
    ),
    "grid of the wrong size": (lambda: PGMConfig(V, L, grid=(2, 2)), ValueError, "grid"),
    "NaN rope base": (lambda: PGMConfig(V, L, rope_base=float("nan")), ValueError, "rope_base"),
    "model from a dict": (lambda: PartitionTransformer({"vocab_size": V}), TypeError, "cfg"),
    # the model: ids, shapes, dtypes
    "model on ids past the vocabulary": (lambda: _NET(_BIG_X, _G), ValueError, "x0"),
    "model on negative ids": (lambda: _NET(_X - 9, _G), ValueError, "x0"),
    "model on the wrong length": (lambda: _NET(_X[:, :4], _G[:, :4]), ValueError, "x0"),
    "model on float tokens": (lambda: _NET(_X.float(), _G), TypeError, "x0"),
    "model on an empty batch": (lambda: _NET(_X[:0], _G[:0]), ValueError, "x0"),
    "groups of the wrong shape": (lambda: _NET(_X, _G[:, :4]), ValueError, "groups"),
    "groups with a 2": (lambda: check_groups(_G.long() * 2, _X), ValueError, "groups"),
    "groups as a list": (lambda: check_groups(_G.tolist(), _X), TypeError, "groups"),
    "attention allow of the wrong shape": (
        lambda: masked_attention(_QKV, _QKV, _QKV, torch.ones(2, 4, 3, dtype=torch.bool)),
        ValueError,
        "allow",
    ),
    "attention k of another length than v": (
        lambda: masked_attention(_QKV, _QKV, _QKV[:, :, :3], None),
        ValueError,
        "v",
    ),
    # losses
    "loss on ids past the vocabulary": (lambda: pgm_loss(_NET, _BIG_X, _S, V), ValueError, "x0"),
    "loss on NaN times": (lambda: pgm_loss(_NET, _X, _S, V, t=_NAN_T), ValueError, "t"),
    "loss with another vocabulary than the model": (
        lambda: pgm_loss(_NET, _X, _S, V + 1),
        ValueError,
        "vocab_size",
    ),
    "loss on an empty batch": (lambda: pgm_loss(_NET, _X[:0], _S, V), ValueError, "x0"),
    "partition terms on NaN logits": (
        lambda: partition_terms(torch.full((3, L, V), float("nan")), _X, _G, _T, _S),
        ValueError,
        "logits",
    ),
    "partition terms on NaN times": (
        lambda: partition_terms(torch.zeros(3, L, V), _X, _G, _NAN_T, _S),
        ValueError,
        "t",
    ),
    "partition terms with ids past the logits": (
        lambda: partition_terms(torch.zeros(3, L, V), _BIG_X, _G, _T, _S),
        ValueError,
        "x0",
    ),
    "nelbo zero samples": (
        lambda: pgm_nelbo(_NET, _X, _S, V, n_samples=0),
        ValueError,
        "n_samples",
    ),
    "as_denoiser with another vocabulary": (
        lambda: as_denoiser(_NET, V + 2),
        ValueError,
        "vocab_size",
    ),
    # samplers
    "ordered zero steps": (
        lambda: pgm_ordered_sample(_NET, torch.arange(L), steps=0),
        ValueError,
        "steps",
        "0",
    ),
    "ordered order not a permutation": (
        lambda: pgm_ordered_sample(_NET, torch.zeros(L, dtype=torch.long), steps=2),
        ValueError,
        "order",
    ),
    "ordered order of the wrong length": (
        lambda: pgm_ordered_sample(_NET, torch.arange(L - 1), steps=2),
        ValueError,
        "order",
    ),
    "ordered NaN temperature": (
        lambda: pgm_ordered_sample(_NET, torch.arange(L), steps=2, temperature=float("nan")),
        ValueError,
        "temperature",
    ),
    "confidence unknown counts": (
        lambda: pgm_confidence_sample(_NET, steps=2, counts="zzz"),
        ValueError,
        "counts",
        "zzz",
    ),
    "confidence zero batch": (
        lambda: pgm_confidence_sample(_NET, steps=2, batch_size=0),
        ValueError,
        "batch_size",
    ),
    "confidence on a plain module": (
        lambda: pgm_confidence_sample(torch.nn.Linear(2, 2), steps=2),
        TypeError,
        "model",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])
