"""The experiments end to end at toy size, and the console script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from topoformer.cli import main
from topoformer.costs import ESTIMATE_S
from topoformer.experiments.common import TrainSettings
from topoformer.experiments.mutag import MutagConfig, run_mutag
from topoformer.model import TopoFormerConfig

from shared_core.testing import assert_help_states_the_committed_costs


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
    assert set(res.tokens) == {"ricci", "hks"}  # the authors' final pair is the default
    assert res.tokens["hks"].shape[0] == 45
    assert np.all(res.tokens["hks"] >= 0)


def test_defaults_are_the_authors_final_settings():
    from topoformer.experiments.molecules import MoleculeConfig
    from topoformer.experiments.reproduce import SCALES
    from topoformer.model import PAPER_TEXT_CONFIG

    assert MutagConfig().filtrations == ("ricci", "hks")  # train_g.py
    mol = MoleculeConfig()
    assert mol.filtrations == ("ricci", "atomic_weight") and mol.ecfp  # train_scffold.py
    assert (mol.model.d_model, mol.model.dropout, mol.train.epochs) == (32, 0.0, 50)
    assert (MutagConfig().model.d_model, MutagConfig().model.dropout) == (64, 0.0)
    assert (PAPER_TEXT_CONFIG.d_model, PAPER_TEXT_CONFIG.dropout) == (32, 0.5)
    for scale in ("tiny", "small"):
        assert SCALES[scale].mutag.filtrations == ("ricci", "hks")
        assert SCALES[scale].molecules.filtrations == ("ricci", "atomic_weight")


def test_help_is_fast_and_imports_no_torch():
    code = (
        "import sys; from topoformer.cli import main\n"
        "try:\n    main(['reproduce', '--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules, 'torch imported by --help'"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "--scale" in out.stdout


def test_costs_are_the_committed_runs():
    """ESTIMATE_S (the ETA's figures) is the committed tiny and small runs' CPU time, and
    --help prints it."""
    assert ESTIMATE_S["paper"] == ESTIMATE_S["small"]  # the same configuration
    assert_help_states_the_committed_costs(
        main,
        ESTIMATE_S,
        Path(__file__).parent,
        [
            f"tiny: about {ESTIMATE_S['tiny']:.0f} s of CPU",
            f"about {ESTIMATE_S['small'] / 60:.0f} minutes of CPU",
        ],
        required=("tiny", "small"),
    )


def test_cv_name_says_how_many_folds_ran():
    from topoformer.experiments.reproduce import _cv_name

    assert _cv_name(MutagConfig()) == "10-fold CV"
    assert _cv_name(MutagConfig(folds=3, run_folds=1)) == "first 1 of 3 folds of a 3-fold CV"
    assert _cv_name(MutagConfig(folds=3, run_folds=3)) == "3-fold CV"


def test_torch_geometric_import_leaks_no_future_warning():
    # torch_geometric calls the deprecated torch.jit.script at import; a run must not print it
    code = (
        "import numpy as np\nfrom topoformer.baselines import to_pyg\n"
        "from topoformer.graph import Graph\n"
        "to_pyg(Graph(3, np.array([[0, 1], [1, 2]])), np.ones((3, 1), np.float32))"
    )
    out = subprocess.run(
        [sys.executable, "-W", "error::FutureWarning", "-c", code], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr


def test_missing_graphs_extra_is_one_line(monkeypatch, capsys, tmp_path):
    # the error comes before the run's plan line (shared_core.progress), so it stays alone
    from topoformer.cli import main

    from shared_core.testing import assert_missing_extra_is_one_line

    line = assert_missing_extra_is_one_line(
        main, "grakel", "topoformer", "graphs", monkeypatch=monkeypatch, capsys=capsys,
        out=tmp_path,
    )  # fmt: skip
    assert "MUTAG" in line
