import json
import subprocess
import sys
from pathlib import Path

from mathmo.cli import main
from mathmo.costs import ESTIMATE_S
from mathmo.experiments.ablation import SCALES, Config, reproduce
from mathmo.search import SearchConfig

from shared_core.cli import ReproduceArgs
from shared_core.testing import assert_help_states_the_committed_costs

REQUIRED = ("tiny", "small")  # the runs committed under results/


def test_reproduce_writes_report_and_orders_methods(tmp_path: Path) -> None:
    config = Config(
        tasks=("tsp",),
        seeds=2,
        search=SearchConfig(rounds=6, time_limit=30.0),
        tsp_cities=6,
        ortools=False,
    )
    summary = reproduce(ReproduceArgs(scale="micro", out=tmp_path, config=config))
    run = next((tmp_path / "mathmo").iterdir())
    metrics = json.loads((run / "metrics.json").read_text())
    assert (run / "report.md").exists() and (run / "fronts_and_hypervolume.png").exists()
    for v in ("mathmo", "ran", "flat", "naive"):
        assert 0.0 < summary["tsp"][f"{v}_rel_hv"] <= 1.0 + 1e-12
    assert metrics["metrics"]["sandbox_children_cpu_s"] >= 0.0


def test_scales_are_defined() -> None:
    assert set(SCALES) == {"micro", "tiny", "small", "paper"}
    assert SCALES["tiny"].search.rounds == 20 and SCALES["tiny"].seeds == 10


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys\nfrom mathmo.cli import main\n"
        "try:\n    main(['reproduce', '--help'])\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('torch', 'ortools', 'gplearn', 'scipy.optimize') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_cli_rejects_unknown_scale() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mathmo.cli", "reproduce", "--scale", "huge"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "huge" in out.stderr


def test_paper_scale_without_endpoint_is_one_line(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MATHMO_BASE_URL", raising=False)
    monkeypatch.delenv("MATHMO_MODEL", raising=False)
    from shared_core.cli import UsageError

    config = Config(tasks=("tsp",), seeds=1, operators="openai", tsp_cities=5, ortools=False)
    import pytest

    with pytest.raises(UsageError, match="MATHMO_BASE_URL"):
        reproduce(ReproduceArgs(scale="paper", out=tmp_path, config=config))


def test_unknown_judge_is_rejected(tmp_path: Path) -> None:
    import pytest

    with pytest.raises(ValueError, match="judge"):
        reproduce(ReproduceArgs(scale="micro", out=tmp_path, config=Config(judge="gpt")))


def test_mose_diagnostics_ranks_scores_against_model_size() -> None:
    import numpy as np
    from mathmo.experiments.ablation import mose_diagnostics
    from mathmo.operators import Evaluation
    from mathmo.tasks.base import Candidate
    from mathmo.tasks.epidemiology import EpidemiologyTask
    from mathmo.tasks.tsp import TSPTask

    def ev(n: int, score: float, failed: bool = False) -> Evaluation:
        raw = (("mechanistic", 1.0), ("n_params", float(n)), ("rmse", 1.0))
        return Evaluation(-1, Candidate.of("sir", n=n), np.array([0.5, score]), failed, "", raw)

    task = EpidemiologyTask(0)
    smaller_is_clearer = [ev(2, 0.9), ev(4, 0.7), ev(8, 0.6), ev(16, 0.1), ev(32, 0.0, failed=True)]
    d = mose_diagnostics(task, smaller_is_clearer)
    assert d["mose_models"] == 4 and (d["mose_min"], d["mose_max"]) == (0.1, 0.9)
    assert d["mose_spearman_n_params"] == -1.0
    d = mose_diagnostics(task, [ev(2, 0.1), ev(4, 0.2), ev(8, 0.3)])
    assert d["mose_spearman_n_params"] == 1.0
    assert "mose_spearman_n_params" not in mose_diagnostics(
        task, [ev(2, 0.5), ev(4, 0.5), ev(8, 0.5)]
    )
    assert mose_diagnostics(TSPTask(5, 0, ortools=False), smaller_is_clearer) == {}


def test_costs_are_the_committed_runs() -> None:
    """ESTIMATE_S (the ETA's figures) is the committed runs' CPU time, and --help prints it."""
    shown = (f"tiny: ~{ESTIMATE_S['tiny']:.0f} CPU-s",)
    measured = assert_help_states_the_committed_costs(
        main, ESTIMATE_S, Path(__file__).parent, shown, required=REQUIRED
    )
    assert set(measured) == set(REQUIRED)
