"""The experiments end to end at toy size, and the console script."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from topoformer.experiments.common import TrainSettings
from topoformer.experiments.mutag import MutagConfig, run_mutag
from topoformer.model import TopoFormerConfig


def test_mutag_runs_every_method_under_both_protocols():
    cfg = MutagConfig(
        folds=3, run_folds=1, limit=45, train=TrainSettings(epochs=2),
        model=TopoFormerConfig(d_model=8, n_layers=1, dim_feedforward=16), gin_hidden=8,
        gin_layers=2,
    )  # fmt: skip
    res = run_mutag(cfg)
    for method in ("topoformer", "gin", "wl_svm", "ph_mlp"):
        (s,) = res.selections[method]
        assert 0.0 <= s.honest <= s.optimistic <= 1.0
    assert res.tokens["degree"].shape[0] == 45
    assert np.all(res.tokens["degree"] >= 0)


def test_help_is_fast_and_imports_no_torch():
    code = (
        "import sys; from topoformer.cli import main\n"
        "try:\n    main(['reproduce', '--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules, 'torch imported by --help'"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "--scale" in out.stdout
