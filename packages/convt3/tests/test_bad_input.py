"""Bad input to the public API (the names in ``convt3.__all__`` and the torch layer), in one
table: each case raises a ValueError/TypeError naming the argument (issue 46's probe: the
state lives in scaled eigen-coordinates, and a pixel-space state was easy to pass by mistake;
a real tensor, which cannot be an eigen-coordinate state of a 3x3 kernel, is refused)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from convt3 import (
    closed_form_eigenvalues,
    convt3_sequential,
    corners_to_coefficients,
    init_ssm_params,
    ptt_kernel,
    sine_basis,
    state_coefficients,
)
from convt3.torch import ConvT3SSM

from shared_core.testing import assert_bad_input

_LAYER = ConvT3SSM(2, 4)
_U = torch.randn(1, 3, 2, 5, 6)
_NAN_U = _U.clone()
_NAN_U[0, 1, 0, 2, 2] = float("nan")
_PIXEL_STATE = torch.randn(1, 2, 5, 6)  # real: a pixel-space field, not eigen-coordinates

CASES = {
    # the torch layer
    "NaN input": (lambda: _LAYER(_NAN_U), ValueError, "u"),
    "inf input": (lambda: _LAYER(_U * float("inf")), ValueError, "u"),
    "empty time axis": (lambda: _LAYER(torch.zeros(1, 0, 2, 5, 6)), ValueError, "u"),
    "4-D input": (lambda: _LAYER(torch.zeros(1, 2, 5, 6)), ValueError, "u"),
    "wrong feature count": (lambda: _LAYER(torch.zeros(1, 3, 3, 5, 6)), ValueError, "u"),
    "complex input": (lambda: _LAYER(_U.to(torch.complex64)), TypeError, "u"),
    "numpy input": (lambda: _LAYER(_U.numpy()), TypeError, "u"),
    "pixel-space (real) state": (lambda: _LAYER(_U, _PIXEL_STATE), TypeError, "state"),
    "state of the wrong shape": (
        lambda: _LAYER(_U, torch.zeros(1, 2, 4, 6, dtype=torch.complex64)),
        ValueError,
        "state",
    ),
    "NaN state": (
        lambda: _LAYER(_U, torch.full((1, 2, 5, 6), complex("nan"), dtype=torch.complex64)),
        ValueError,
        "state",
    ),
    "step on a 5-D input": (
        lambda: _LAYER.step(_U, _LAYER.initial_state(1, 5, 6)),
        ValueError,
        "u",
    ),
    "odd state size": (lambda: ConvT3SSM(2, 5), ValueError, "state_size", "5"),
    "even kernel": (lambda: ConvT3SSM(2, 4, kernel_b=2), ValueError, "kernel_b"),
    "unknown state kernel": (
        lambda: ConvT3SSM(2, 4, state_kernel="5x5"),
        ValueError,
        "state_kernel",
    ),
    "unknown discretization": (
        lambda: ConvT3SSM(2, 4, discretization="euler"),
        ValueError,
        "discretization",
    ),
    "zero alpha": (lambda: ConvT3SSM(2, 4, alpha_h=0.0), ValueError, "alpha_h"),
    "float features": (lambda: ConvT3SSM(2.0, 4), TypeError, "features"),
    "dt_min above dt_max": (lambda: ConvT3SSM(2, 4, dt_min=0.5, dt_max=0.1), ValueError, "dt_min"),
    # numpy spectral helpers
    "sine basis of size 0": (lambda: sine_basis(0), ValueError, "n"),
    "sine basis of a float size": (lambda: sine_basis(4.0), TypeError, "n"),
    "sine basis ill-conditioned": (lambda: sine_basis(200, alpha=3.0), ValueError, "n"),
    "NaN alpha": (lambda: sine_basis(4, alpha=float("nan")), ValueError, "alpha"),
    "corners of the wrong width": (
        lambda: corners_to_coefficients(np.ones(3)),
        ValueError,
        "corners",
    ),
    "NaN corners": (lambda: corners_to_coefficients(np.full(4, np.nan)), ValueError, "corners"),
    "kernel of the wrong width": (lambda: ptt_kernel(np.ones(3)), ValueError, "coefficients"),
    "kernel of NaN": (lambda: ptt_kernel(np.full(4, np.nan)), ValueError, "coefficients"),
    "eigenvalues on a zero grid": (
        lambda: closed_form_eigenvalues(np.ones(4), 0, 3),
        ValueError,
        "H",
    ),
    "eigenvalues of the wrong width": (
        lambda: closed_form_eigenvalues(np.ones(3), 3, 3),
        ValueError,
        "coefficients",
    ),
    "unknown discretization (numpy)": (
        lambda: state_coefficients(np.zeros((2, 4)), "euler"),
        ValueError,
        "discretization",
    ),
    "params with odd state size": (
        lambda: init_ssm_params(np.random.default_rng(0), 2, 5),
        ValueError,
        "state_size",
    ),
    "reference of NaN input": (
        lambda: convt3_sequential(
            np.full((1, 2, 1, 3, 3), np.nan),
            np.array([-0.5 + 1j]),
            np.array([0.1]),
            np.array([[1.0, 0.0, 0.0, 0.0]]),
            np.ones((1, 1, 1, 1), complex),
            np.ones((1, 1, 1, 1), complex),
        ),
        ValueError,
        "u",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])
