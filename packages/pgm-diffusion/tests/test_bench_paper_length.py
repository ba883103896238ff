"""benchmarks/bench_paper_length.py end to end at toy sizes: one row per step count, paired
ratios, tokens/s and the paper's figures in its JSON (CPU; the same script on CUDA is `cuda`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_paper_length.py"


def _run(tmp_path: Path, *extra: str) -> dict:
    if not SCRIPT.is_file():
        pytest.skip("benchmarks/ lives in the repository, not beside a copied tests folder")
    out = tmp_path / "bench.json"
    cmd = [sys.executable, str(SCRIPT), "--length", "32", "--steps", "2", "8", "--repeats", "2"]
    done = subprocess.run(
        [*cmd, *extra, "--json", str(out)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def _check(payload: dict, clock: str) -> None:
    (table,) = payload["tables"]
    assert table["clock"] == clock and table["candidate"] == "PGM"
    assert [r["steps"] for r in table["rows"]] == [2, 8]
    for row in table["rows"]:
        assert row["repeats"] == 2
        ratio = row["speedup"]["MDLM"]
        assert 0 < ratio["min"] <= ratio["median"] <= ratio["max"]
        for name in ("PGM", "MDLM"):  # tokens/s = batch * L / seconds per call
            seconds = row["times_ms"][name] / 1e3
            assert row["tokens_per_s"][name] == pytest.approx(
                payload["size"]["batch"] * 32 / seconds
            )
    assert payload["paper"]["speedup_pgm_8_8"] == pytest.approx(5585.6 / 1043.2)
    assert payload["length"] == 32 and payload["cpu_s"] > 0


def test_cpu_run_writes_paired_rows(tmp_path):
    payload = _run(tmp_path)
    _check(payload, "cpu")
    assert payload["device"] == "cpu" and payload["size"]["d_model"] == 64


@pytest.mark.cuda
def test_cuda_run_times_wall_clock(tmp_path):
    payload = _run(tmp_path, "--device", "cuda")
    _check(payload, "wall")
    assert payload["device"] != "cpu"
