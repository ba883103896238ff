"""Bad input to the public API, in one table: each case raises a ValueError/TypeError naming
the argument (issue 46's probe categories: NaN/inf, empty, shapes, types, names, sizes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from quality_scaling import ScalingData, fit_law, get_law, holdout_error, init_grid, read_runs_csv

from shared_core.testing import assert_bad_input

_RUNS = Path(__file__).parent / "data" / "runs.csv"
_N = [1e6, 2e6, 4e6, 8e6]
_D = [1e8, 2e8, 4e8, 8e8]
_L = [3.0, 2.8, 2.6, 2.5]
_DATA = ScalingData(_N * 2, _D + _D[::-1], _L + _L[::-1], [1.0, 0.9, 0.8, 1.0] * 2)

CASES = {
    "NaN loss": (lambda: ScalingData(_N, _D, [3.0, np.nan, 2.6, 2.5]), ValueError, "loss", "nan"),
    "inf tokens": (lambda: ScalingData(_N, [1e8, np.inf, 4e8, 8e8], _L), ValueError, "D"),
    "zero parameters": (lambda: ScalingData([0.0, 2e6, 4e6, 8e6], _D, _L), ValueError, "N"),
    "empty runs": (lambda: ScalingData([], [], []), ValueError, "N"),
    "2-D column": (lambda: ScalingData([_N], [_D], [_L]), ValueError, "N"),
    "quality above 1": (lambda: ScalingData(_N, _D, _L, [1.0, 1.5, 1.0, 1.0]), ValueError, "Q"),
    "columns of unequal length": (lambda: ScalingData(_N, _D[:3], _L), ValueError, "D"),
    "string column": (lambda: ScalingData(["a"] * 4, _D, _L), TypeError, "N"),
    "unknown law": (lambda: get_law("zzz"), ValueError, "law", "zzz"),
    "fit an unknown law": (lambda: fit_law(_DATA, "zzz"), ValueError, "law"),
    "fit a list of rows": (lambda: fit_law([(1e6, 1e8, 3.0)]), TypeError, "data"),
    "negative Huber delta": (lambda: fit_law(_DATA, delta=-1.0), ValueError, "delta"),
    "level outside (0, 1)": (lambda: fit_law(_DATA, n_bootstrap=2, level=1.5), ValueError, "level"),
    "negative bootstrap count": (lambda: fit_law(_DATA, n_bootstrap=-1), ValueError, "n_bootstrap"),
    "holdout of no fit": (lambda: holdout_error(None, _DATA), TypeError, "fit"),
    "grid of an unknown law": (lambda: init_grid("zzz"), ValueError, "law"),
    "grid with an empty axis": (lambda: init_grid("chinchilla", a=[]), ValueError, "a"),
    "a CSV without the columns": (
        lambda: read_runs_csv(_RUNS, n_col="params"),
        ValueError,
        "params",
    ),
    "a file that is not a table": (lambda: read_runs_csv(__file__), ValueError, "path"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])
