from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import asymmetric_molecule
from orient_bias.cli import main
from orient_bias.costs import AUDIT_QM9_MPNN_S, AUDIT_QM9_S, ESTIMATE_S, audit_cost_help
from orient_bias.frames import pad, principal_frames

from shared_core.testing import assert_help_states_the_committed_costs


def _write_aligned_npz(path, n=120):
    mols = [asymmetric_molecule(s, n=6 + s % 5) for s in range(n)]
    p = pad(mols)
    np.savez(path, positions=principal_frames(p).canonical(p), numbers=p.numbers)


def test_audit_command_writes_report_and_flags_bias(tmp_path, capsys):
    _write_aligned_npz(tmp_path / "aligned.npz")
    (tmp_path / "bad.xyz").write_text("3\nx\nC 0 0 0\n")
    code = main(["audit", str(tmp_path), "--runs", str(tmp_path / "runs"), "--fail-on-bias",
                 "--skip-invalid", "--no-mpnn"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1
    assert "BIASED" in out and "1 skipped" in out and "bad.xyz" in out
    run_dir = next((tmp_path / "runs" / "orient-bias").iterdir())
    metrics = json.loads((run_dir / "metrics.json").read_text())["metrics"]
    assert metrics["biased"] is True and len(metrics["skipped"]) == 1
    assert (run_dir / "mollweide_axes.png").exists() and (run_dir / "report.md").exists()


def test_audit_bad_path_is_one_error_line(tmp_path, capsys):
    code = main(["audit", str(tmp_path / "missing.xyz"), "--runs", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and err.startswith("orient-bias: error:") and "does not exist" in err


def test_audit_needs_exactly_one_source(tmp_path, capsys):
    assert main(["audit", "--runs", str(tmp_path)]) == 2
    assert "exactly one of --data PATH (or PATH) or --dataset" in capsys.readouterr().err
    _write_aligned_npz(tmp_path / "a.npz", n=30)
    assert (
        main(["audit", str(tmp_path / "a.npz"), "--dataset", "qm9", "--runs", str(tmp_path)]) == 2
    )
    assert main(["audit", str(tmp_path / "a.npz"), "--data", str(tmp_path / "a.npz")]) == 2


def test_lazy_scales_are_the_experiment_scales():
    from orient_bias.cli import _SCALES as lazy
    from orient_bias.experiments.reproduce import SCALES

    assert list(lazy) == list(SCALES)
    assert all(lazy[k] == v for k, v in SCALES.items())


def test_costs_are_the_committed_runs():
    """ESTIMATE_S (the ETA's figures) is the committed tiny and small runs' CPU time, and
    --help prints it."""
    assert_help_states_the_committed_costs(
        main,
        ESTIMATE_S,
        Path(__file__).parent,
        [
            f"tiny ~{ESTIMATE_S['tiny']:.0f} s of CPU",
            f"small ~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes",
        ],
        required=("tiny", "small"),
    )


def test_audit_cost_is_the_committed_qm9_audit(capsys):
    """`audit --help`'s cost is the committed `audit --dataset qm9` run's CPU by phase (the
    run's own `cpu_s` counts only its report), the MPNN phase included."""
    results = Path(__file__).resolve().parents[1] / "results" / "audit-qm9.json"
    if not results.is_file():
        pytest.skip("results/ lives in the repository, not beside a copied tests folder")
    phases = json.loads(results.read_text())["metrics"]["cpu_s_by_phase"]
    assert pytest.approx(sum(phases.values()), rel=0.25) == AUDIT_QM9_S
    assert pytest.approx(phases["mpnn"], rel=0.25) == AUDIT_QM9_MPNN_S
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    assert audit_cost_help() in " ".join(capsys.readouterr().out.split()).replace("- ", "-")


def test_help_imports_neither_torch_nor_the_experiments():
    from shared_core.testing import assert_import_is_light

    assert_import_is_light("orient_bias.cli", heavy=("torch", "orient_bias.experiments.reproduce"))


@pytest.mark.slow  # CI runs `orient-bias reproduce --scale micro` itself
def test_reproduce_micro_end_to_end(tmp_path, capsys):
    import importlib.util

    for mod in ("qm9pack", "rdkit", "torch"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed (extras torch, qm9, chem)")
    assert main(["reproduce", "--scale", "micro", "--out", str(tmp_path)]) == 0
    run_dir = next((tmp_path / "orient-bias").iterdir())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["scale"] == "micro" and metrics["run"]["threads"] == 1
    tables = metrics["tables"]
    assert len(tables["finding 1: published vs randomly rotated (test set)"]) == 8
    assert len(tables["finding 1: MPNN under noise and pre-rotation (test set)"]) == 6
    assert len(tables["KL to Haar (k = 5) at the paper's n"]) == 3
    assert len(tables["finding 2: properties from orientation alone (test set)"]) == 12
    assert (run_dir / "mollweide_axes.png").exists()


def test_train_is_the_function_whatever_is_imported_first() -> None:
    """`from orient_bias import TrainConfig, train` once gave the submodule orient_bias/train.py (fixed in
    shared-core's lazy_exports)."""
    from shared_core.testing import assert_fresh_import_is_callable

    assert_fresh_import_is_callable("orient_bias", ["TrainConfig", "train"])


def test_no_export_is_shadowed_by_a_submodule() -> None:
    """``from orient_bias.train import ...`` then ``from orient_bias import train`` gave the submodule, not the
    function: the submodule is now `orient_bias.training`. With every submodule imported
    first, each export is what it names and none is also a submodule's name (issue 68)."""
    from shared_core.testing import assert_exports_not_shadowed

    assert_exports_not_shadowed("orient_bias")
