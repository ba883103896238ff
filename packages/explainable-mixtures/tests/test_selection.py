"""Pruning and selection pieces against closed forms; the schedule's annealing; the module split."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest
from explainable_mixtures import estimator
from explainable_mixtures.schedule import Schedule
from explainable_mixtures.selection import containment, hellinger, jaccard


def _schedule(**changes: object) -> Schedule:
    return Schedule.from_params(estimator.ExplainableMixture().get_params() | changes)


def test_annealing_is_geometric_from_tau_start_to_tau_end():
    s = _schedule(tau_start=0.4, tau_end=0.01)
    assert s.tau_at(0, 101) == pytest.approx(0.4)
    assert s.tau_at(50, 101) == pytest.approx(math.sqrt(0.4 * 0.01))
    assert s.tau_at(100, 101) == pytest.approx(0.01)
    assert s.tau_at(500, 101) == pytest.approx(0.01)  # held at tau_end after the last step


def test_hellinger_matches_the_closed_form_for_1d_gaussians():
    mean = np.array([[0.0], [1.5]])
    cov = np.array([[[1.0]], [[4.0]]])
    v1, v2 = 1.0, 4.0
    bc = math.sqrt(2 * math.sqrt(v1 * v2) / (v1 + v2)) * math.exp(-(1.5**2) / (4 * (v1 + v2)))
    assert hellinger(mean, cov, 0, 1) == pytest.approx(math.sqrt(1 - bc), rel=1e-12)
    assert hellinger(mean, cov, 0, 0) == pytest.approx(0.0, abs=1e-7)


def test_jaccard_and_containment_of_covered_rows():
    covered = np.array([[1, 1], [1, 0], [0, 0], [1, 1], [0, 0]], dtype=bool)
    assert jaccard(covered, 0, 1) == pytest.approx(2 / 3)
    assert containment(covered, 0, 1) == pytest.approx(1.0)  # rule 1 lies inside rule 0
    nothing = np.zeros((3, 2), dtype=bool)
    assert jaccard(nothing, 0, 1) == 0.0 and containment(nothing, 0, 1) == 0.0


def test_the_estimator_module_holds_only_the_scikit_learn_surface():
    """The fit procedure lives in parameterisation / schedule / selection, not in estimator.py."""
    tree = ast.parse(Path(estimator.__file__).read_text())
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    assert functions == [] and classes == ["ExplainableMixture"]
    assert estimator.Rule.__module__ == "explainable_mixtures.parameterisation"
