"""Data, the console script and the reproduce command at micro scale."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from toprovar.data import NUM_CLASSES, load_domain
from toprovar.experiments.reproduce import _interp, matched


@pytest.mark.parametrize("domain", ["digits", "faces"])
def test_domains_load_offline_in_range(domain):
    x, y = load_domain(domain, 16, "train")
    xt, _ = load_domain(domain, 16, "test")
    assert x.shape[1:] == (1, 16, 16) and x.dtype == torch.float32
    assert float(x.min()) >= -1 and float(x.max()) <= 1
    assert set(y.tolist()) == set(range(NUM_CLASSES[domain]))
    assert len(x) + len(xt) == len(load_domain(domain, 8, "all")[0])


def test_domain_bad_arguments_raise():
    with pytest.raises(ValueError, match="name: expected one of"):
        load_domain("mnist")
    with pytest.raises(ValueError, match="split: expected"):
        load_domain("digits", split="val")
    with pytest.raises(ValueError, match="side: expected an int >= 2"):
        load_domain("digits", side=1)


def test_matched_mac_comparison_interpolates_fastvar():
    rows = [
        {"domain": "d", "method": "none", "budget": "-", "MAC speed-up": 1.0, "m": 0.0},
        {"domain": "d", "method": "FastVAR", "budget": "a", "MAC speed-up": 2.0, "m": 1.0},
        {"domain": "d", "method": "ToProVAR", "budget": "b", "MAC speed-up": 1.5, "m": 0.2},
        {"domain": "d", "method": "ToProVAR", "budget": "c", "MAC speed-up": 3.0, "m": 0.2},
    ]
    out = matched(rows, "m")
    assert out[0]["against (interp.)"] == pytest.approx(0.5)
    assert out[1]["against (interp.)"] is None  # outside FastVAR's measured range
    assert _interp(0.5, [1.0, 2.0], [0.0, 1.0]) is None


def test_help_does_not_import_torch():
    code = (
        "import sys; from toprovar.cli import main\n"
        "try:\n    main(['reproduce', '--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_unknown_scale_is_a_usage_error(capsys):
    from toprovar.cli import main

    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--scale", "huge"])
    assert e.value.code == 2


def test_reproduce_micro(tmp_path, monkeypatch):
    from toprovar.cli import main

    monkeypatch.setenv("SHARED_CORE_CACHE", str(tmp_path / "cache"))
    assert main(["reproduce", "--scale", "micro", "--out", str(tmp_path)]) == 0
    (run,) = list((tmp_path / "toprovar").iterdir())
    metrics = json.loads((run / "metrics.json").read_text())
    rows = metrics["metrics"]["rows"]
    assert {r["method"] for r in rows} == {
        "none",
        "ToProVAR",
        "ToProVAR top-k",
        "FastVAR",
        "SkipVAR",
    }
    base = next(r for r in rows if r["method"] == "none")
    assert base["MSE vs unpruned"] == 0 and base["codes agree"] == 1
    assert all(r["MAC speed-up"] >= 1 for r in rows)
    assert (run / "digits_mse.png").exists() and (run / "report.md").exists()


def test_public_names_resolve():
    import toprovar

    for name in toprovar.__all__:
        assert getattr(toprovar, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        toprovar.nope  # noqa: B018


def test_function_names_are_not_shadowed_by_submodules():
    import toprovar
    import toprovar.generation  # importing the submodule must not shadow the function

    assert callable(toprovar.generate) and callable(toprovar.calibrate)


def test_min_depth_ablation_below_two_is_a_usage_error(tmp_path):
    from toprovar.cli import main

    assert main(["reproduce", "--scale", "micro", "--min-depth", "1", "--out", str(tmp_path)]) == 2


def test_missing_data_extra_is_one_line(monkeypatch, capsys, tmp_path):
    # the error comes before the run's plan line (shared_core.progress), so it stays alone
    from toprovar.cli import main

    from shared_core.testing import assert_missing_extra_is_one_line

    line = assert_missing_extra_is_one_line(
        main, "sklearn", "toprovar", "data", monkeypatch=monkeypatch, capsys=capsys,
        out=tmp_path,
    )  # fmt: skip
    assert "digits" in line


def test_costs_are_the_committed_runs():
    """ESTIMATE_S (the heartbeat's ETA and --help's figures) is the committed runs' CPU time."""
    from pathlib import Path

    from toprovar.cli import main
    from toprovar.experiments import ESTIMATE_S

    from shared_core.testing import assert_help_states_the_committed_costs

    assert_help_states_the_committed_costs(
        main,
        ESTIMATE_S,
        Path(__file__).parent,
        [f"tiny: ~{ESTIMATE_S['tiny']:.0f} CPU-s", f"small: ~{ESTIMATE_S['small']:.0f} CPU-s"],
        required=("tiny", "small"),
    )
