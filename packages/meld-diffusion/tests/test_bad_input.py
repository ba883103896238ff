"""Bad input to meld-diffusion's public API, in one table: each case raises a ValueError or
TypeError naming the argument (issue 46: ``decode(n_atoms=12, max_atoms=9)`` returned a 12-atom
graph; an empty column tensor, an empty batch and out-of-range tokens gave raw torch errors)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from masked_diffusion import LogLinearSchedule
from meld_diffusion.data import decode, seq_len
from meld_diffusion.evaluate import sample_metrics
from meld_diffusion.meld import GraphMDM, class_loss, graph_loss_fn, meld_loss, meld_sample
from meld_diffusion.model import GraphTransformer, GraphTransformerConfig
from meld_diffusion.rates import ClassRates, ElementRates, MELDConfig
from meld_diffusion.schedule import ElementwiseSchedule

from shared_core.testing import assert_bad_input

N = 4
SCHEDULE = ElementwiseSchedule(LogLinearSchedule(eps=1e-4))
_RATES = ElementRates(MELDConfig(n_columns=N, dim=3))
_MODEL = GraphMDM(
    GraphTransformer(GraphTransformerConfig(max_atoms=N, d_node=8, d_edge=4, n_layers=1, d_pos=3)),
    _RATES,
)
_CLASS_MODEL = GraphMDM(
    GraphTransformer(GraphTransformerConfig(max_atoms=N, d_node=8, d_edge=4, n_layers=1)),
    ClassRates(),
)
_X = torch.zeros(2, seq_len(N), dtype=torch.long)
_N = torch.tensor([2, 3])
_ROWS = np.zeros((1, seq_len(9)), dtype=np.int64)


def _loss(**kw: object) -> object:
    args: dict[str, object] = {"x0": _X, "n_atoms": _N} | kw
    return meld_loss(_MODEL, args.pop("x0"), args.pop("n_atoms"), SCHEDULE, max_atoms=N, **args)  # type: ignore[arg-type]


CASES = {
    "decode: more atoms than max_atoms": (
        lambda: decode(_ROWS, np.array([12]), 9),
        ValueError,
        "n_atoms",
        "12",
    ),
    "decode: zero atoms": (lambda: decode(_ROWS, np.array([0]), 9), ValueError, "n_atoms"),
    "decode: mask token left": (
        lambda: decode(np.full((1, seq_len(9)), 4), np.array([3]), 9),
        ValueError,
        "rows",
    ),
    "MELDConfig dim 0": (lambda: MELDConfig(dim=0), ValueError, "dim", "0"),
    "MELDConfig unknown elements": (
        lambda: MELDConfig(elements="atoms"),
        ValueError,
        "elements",
        "atoms",
    ),
    "MELDConfig eps 1": (lambda: MELDConfig(eps=1.0), ValueError, "eps"),
    "empty column assignment": (
        lambda: _RATES(torch.zeros(0, N, dtype=torch.long)),
        ValueError,
        "columns",
    ),
    "column out of range": (
        lambda: _RATES(torch.tensor([[0, 1, 2, 7]])),
        ValueError,
        "columns",
        "7",
    ),
    "graph larger than H": (lambda: _RATES.columns(2, N + 1), ValueError, "max_atoms"),
    "empty batch": (lambda: _loss(x0=_X[:0], n_atoms=_N[:0]), ValueError, "x0"),
    "float tokens": (lambda: _loss(x0=_X.double()), TypeError, "x0"),
    "mask token in x0": (lambda: _loss(x0=_X + 4), ValueError, "x0", "4"),
    "atom count above max_atoms": (
        lambda: _loss(n_atoms=torch.tensor([2, 9])),
        ValueError,
        "n_atoms",
    ),
    "NaN time": (
        lambda: _loss(t=torch.tensor([0.5, float("nan")])),
        ValueError,
        "t",
    ),
    "time above 1": (lambda: _loss(t=torch.tensor([0.5, 2.0])), ValueError, "t"),
    "tau 0": (lambda: _loss(tau=0.0), ValueError, "tau"),
    "recon without a cut-off": (
        lambda: _loss(recon=True, sampling_eps=0.0),
        ValueError,
        "sampling_eps",
        "0.0",
    ),
    "ClassRates normalise not a bool": (
        lambda: ClassRates(normalise="yes"),  # type: ignore[arg-type]
        TypeError,
        "normalise",
        "yes",
    ),
    "unknown gradient": (lambda: _loss(gradient="reinforce"), ValueError, "gradient", "reinforce"),
    "class_loss: unknown gradient": (
        lambda: class_loss(_CLASS_MODEL, _X, _N, SCHEDULE, max_atoms=N, gradient="reinforce"),
        ValueError,
        "gradient",
        "reinforce",
    ),
    "unknown gradient (loss_fn)": (
        lambda: graph_loss_fn(SCHEDULE, N, gradient="st-gumbel"),
        ValueError,
        "gradient",
    ),
    "sampler: zero steps": (
        lambda: meld_sample(_MODEL, _N, max_atoms=N, steps=0, schedule=SCHEDULE),
        ValueError,
        "steps",
    ),
    "sampler: empty atom counts": (
        lambda: meld_sample(_MODEL, _N[:0], max_atoms=N, steps=2, schedule=SCHEDULE),
        ValueError,
        "n_atoms",
    ),
    "rates: negative w": (
        lambda: SCHEDULE.mask_prob(torch.tensor([0.5]), torch.tensor([[-1.0]])),
        ValueError,
        "w",
    ),
    "metrics: training rows without counts": (
        lambda: sample_metrics(_ROWS, np.array([1]), 9, train_rows=_ROWS),
        ValueError,
        "train_rows",
    ),
    "metrics: fcd not a bool": (
        lambda: sample_metrics(_ROWS, np.array([1]), 9, fcd="yes"),  # type: ignore[arg-type]
        TypeError,
        "fcd",
    ),
    "metrics: no rows": (
        lambda: sample_metrics(_ROWS[:0], np.zeros(0, dtype=np.int64), 9),
        ValueError,
        "rows",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])  # type: ignore[arg-type]


def test_metrics_need_no_training_data_and_fcd_can_be_switched_off() -> None:
    """issue 46: validity needs the samples only; FCD runs only when asked (or by default)."""
    rows = np.zeros((2, seq_len(9)), dtype=np.int64)  # methane and ethane: C, C-C
    rows[1, 9] = 1
    m = sample_metrics(rows, np.array([1, 2]), 9)
    assert m == {"validity": 1.0, "connected": 1.0, "uniqueness": 1.0}
    m = sample_metrics(rows, np.array([1, 2]), 9, reference_smiles=["CC", "CCO"], fcd=False)
    assert "fcd" not in m and "scaffold" in m and "novelty" not in m
