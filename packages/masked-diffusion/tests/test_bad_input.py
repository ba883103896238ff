"""Bad input to the public API, in one table (issue 46's probe categories: NaN/inf, empty,
shapes, dtypes, ids/sizes/names, types): each case raises a ValueError/TypeError naming the
argument."""

from __future__ import annotations

import pytest
import torch
from masked_diffusion import (
    BackboneConfig,
    CausalCharLM,
    CharLMConfig,
    LogLinearSchedule,
    MaskedDiffusionTransformer,
    ancestral_sample,
    check_logits,
    check_times,
    check_tokens,
    confidence_sample,
    digits_grid,
    generative_nll,
    get_schedule,
    halton_order,
    mdlm_loss,
    nelbo,
    ordered_sample,
    q_xt,
    random_order,
    reveal_counts,
    row_batches,
    sample_t,
    sequence_entropy,
    time_grid,
)

from shared_core.testing import assert_bad_input

torch.manual_seed(0)
V, L = 5, 6
_NET = MaskedDiffusionTransformer(BackboneConfig(V, L, d_model=16, n_heads=2, n_layers=1))
_LM = CausalCharLM(CharLMConfig(V, L, d_model=16, n_heads=2, n_layers=1))
_S = LogLinearSchedule()
_X = torch.randint(0, V, (3, L))
_T = torch.full((3,), 0.5)
_NAN_T = torch.tensor([0.5, float("nan"), 0.2])
_BIG_X = _X.clone()
_BIG_X[0, 0] = V + 3


def _net(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return _NET(x, t)


CASES = {
    # configs: sizes and types
    "zero vocabulary": (lambda: BackboneConfig(0, L), ValueError, "vocab_size", "0"),
    "heads not dividing d_model": (
        lambda: BackboneConfig(V, L, d_model=16, n_heads=3),
        ValueError,
        "n_heads",
    ),
    "grid of the wrong size": (lambda: BackboneConfig(V, L, grid=(2, 2)), ValueError, "grid"),
    "dropout of 1": (lambda: BackboneConfig(V, L, dropout=1.0), ValueError, "dropout"),
    "NaN dropout": (lambda: BackboneConfig(V, L, dropout=float("nan")), ValueError, "dropout"),
    "float seq_len in the evaluator": (lambda: CharLMConfig(V, 6.0), ValueError, "seq_len"),
    "unknown schedule": (lambda: get_schedule("zzz"), ValueError, "name", "zzz"),
    # the denoiser: shapes, ids, dtypes
    "denoiser on the wrong length": (lambda: _NET(_X[:, :4]), ValueError, "x_t"),
    "denoiser on an id past the mask": (lambda: _NET(_BIG_X), ValueError, "x_t"),
    "denoiser on float tokens": (lambda: _NET(_X.float()), TypeError, "x_t"),
    # forward process and times
    "check_tokens on out-of-range ids": (lambda: check_tokens(_BIG_X, V), ValueError, "x0"),
    "check_tokens on an empty batch": (
        lambda: check_tokens(torch.zeros(0, L, dtype=torch.long), V),
        ValueError,
        "x0",
    ),
    "check_times on NaN": (lambda: check_times(_NAN_T, 3), ValueError, "t"),
    "check_times of the wrong size": (lambda: check_times(_T[:2], 3), ValueError, "t"),
    "sample_t zero batch": (lambda: sample_t(0), ValueError, "batch_size", "0"),
    "sample_t eps of 1": (lambda: sample_t(4, sampling_eps=1.0), ValueError, "sampling_eps"),
    "q_xt on NaN times": (lambda: q_xt(_X, _NAN_T, _S, V), ValueError, "t"),
    "q_xt on times above 1": (lambda: q_xt(_X, _T + 1.0, _S, V), ValueError, "t"),
    "q_xt on out-of-range ids": (lambda: q_xt(_BIG_X, _T, _S, V), ValueError, "x0"),
    "schedule alpha on NaN": (lambda: _S.alpha(_NAN_T), ValueError, "t"),
    # losses
    "mdlm_loss on out-of-range ids": (lambda: mdlm_loss(_net, _BIG_X, _S, V), ValueError, "x0"),
    "mdlm_loss zero vocabulary": (lambda: mdlm_loss(_net, _X, _S, 0), ValueError, "vocab_size"),
    "mdlm_loss on NaN times": (lambda: mdlm_loss(_net, _X, _S, V, t=_NAN_T), ValueError, "t"),
    "mdlm_loss on an empty batch": (
        lambda: mdlm_loss(_net, _X[:0], _S, V),
        ValueError,
        "x0",
    ),
    "nelbo zero samples": (lambda: nelbo(_net, _X, _S, V, n_samples=0), ValueError, "n_samples"),
    "nelbo on float tokens": (lambda: nelbo(_net, _X.float(), _S, V), TypeError, "x0"),
    "check_logits of the wrong vocabulary": (
        lambda: check_logits(torch.zeros(3, L, V + 2), _X, V),
        ValueError,
        "logits",
    ),
    "check_logits with NaN": (
        lambda: check_logits(torch.full((3, L, V + 1), float("nan")), _X, V),
        ValueError,
        "logits",
    ),
    # samplers
    "ancestral zero steps": (
        lambda: ancestral_sample(_net, vocab_size=V, steps=0, seq_len=L),
        ValueError,
        "steps",
        "0",
    ),
    "ancestral NaN temperature": (
        lambda: ancestral_sample(_net, vocab_size=V, steps=2, seq_len=L, temperature=float("nan")),
        ValueError,
        "temperature",
    ),
    "ancestral x_init out of range": (
        lambda: ancestral_sample(_net, vocab_size=V, steps=2, x_init=_BIG_X),
        ValueError,
        "x_init",
    ),
    "confidence unknown counts": (
        lambda: confidence_sample(_net, vocab_size=V, steps=2, seq_len=L, counts="zzz"),
        ValueError,
        "counts",
        "zzz",
    ),
    "confidence negative choice temperature": (
        lambda: confidence_sample(_net, vocab_size=V, steps=2, seq_len=L, choice_temperature=-1.0),
        ValueError,
        "choice_temperature",
    ),
    "ordered sample with a non-permutation order": (
        lambda: ordered_sample(_net, torch.zeros(L, dtype=torch.long), vocab_size=V, steps=2),
        ValueError,
        "order",
    ),
    "reveal_counts more steps than positions": (
        lambda: reveal_counts(3, 0),
        ValueError,
        "steps",
    ),
    "reveal_counts unknown kind": (lambda: reveal_counts(6, 2, "zzz"), ValueError, "kind", "zzz"),
    "time_grid zero steps": (lambda: time_grid(0), ValueError, "steps"),
    "random_order zero length": (lambda: random_order(2, 0), ValueError, "seq_len"),
    "halton_order zero width": (lambda: halton_order(3, 0), ValueError, "width"),
    # evaluation and data
    "generative_nll on out-of-range ids": (
        lambda: generative_nll(_LM, _BIG_X, V),
        ValueError,
        "samples",
    ),
    "generative_nll zero batch": (
        lambda: generative_nll(_LM, _X, V, batch_size=0),
        ValueError,
        "batch_size",
    ),
    "sequence_entropy on an empty batch": (
        lambda: sequence_entropy(_X[:0], V),
        ValueError,
        "samples",
    ),
    "row_batches zero batch": (lambda: row_batches(_X, 0, 0), ValueError, "batch_size"),
    "row_batches on an empty table": (lambda: row_batches(_X[:0], 2, 0), ValueError, "data"),
    "digits_grid one level": (lambda: digits_grid(levels=1), ValueError, "levels"),
    "digits_grid fractions not summing to 1": (
        lambda: digits_grid(fractions=(0.5, 0.1, 0.1)),
        ValueError,
        "fractions",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])
