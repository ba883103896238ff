"""`mathmo solve` on a user's task file: outputs, a non-dominated front, one clear error per bad file."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mathmo import Candidate
from mathmo.cli import main
from mathmo.pareto import non_dominated
from mathmo.tasks.from_file import load_task_file

TASK = Path(__file__).parent / "data" / "regression_task.py"


def _solve(tmp_path: Path, data: Path, *extra: str) -> int:
    return main(
        ["solve", "--data", str(data), "--out", str(tmp_path / "out"),
         "--runs", str(tmp_path / "runs"), "--set", "rounds=8", *extra]
    )  # fmt: skip


def test_solve_writes_a_non_dominated_front(tmp_path: Path) -> None:
    assert _solve(tmp_path, TASK) == 0
    out = tmp_path / "out"
    for name in ("front.csv", "evaluations.csv", "front.png", "best_models.py", "task.py"):
        assert (out / name).stat().st_size > 0, name
    with open(out / "front.csv") as fh:
        front = list(csv.DictReader(fh))
    with open(out / "evaluations.csv") as fh:
        evaluations = list(csv.DictReader(fh))
    assert len(evaluations) == 8 and 1 <= len(front) <= 8
    y = np.array([[float(r["accuracy"]), float(r["simplicity"])] for r in front])
    assert non_dominated(y).all()
    # no evaluated model dominates a front model (the front is the whole run's)
    ok = np.array(
        [[float(r["accuracy"]), float(r["simplicity"])] for r in evaluations if not r["error"]]
    )
    for p in y:
        assert not np.any(np.all(ok >= p, axis=1) & np.any(ok > p, axis=1))
    assert (out / "front.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the best models' code re-runs them on the copied task file
    run = subprocess.run(
        [sys.executable, "best_models.py"], cwd=out, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.strip().splitlines()) == len(front)


def test_solve_is_reproducible_at_a_seed(tmp_path: Path) -> None:
    assert _solve(tmp_path, TASK, "--set", "sandbox=false") == 0
    first = (tmp_path / "out" / "front.csv").read_text().splitlines()
    shutil.rmtree(tmp_path / "out")
    assert _solve(tmp_path, TASK, "--set", "sandbox=false") == 0
    again = (tmp_path / "out" / "front.csv").read_text().splitlines()
    # runtimes are not objectives here, so the same seed gives the same front
    assert first == again


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


GOOD = TASK.read_text()


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("task.py", GOOD.replace("def normalise(", "def renamed("), "does not define normalise"),
        ("task.py", GOOD.replace("objectives = ", "objective_names = ").replace("def evaluate(", "def run("),
         "does not define objectives, evaluate"),
        ("task.py", GOOD + "\ndef broken(:\n", "is not valid Python"),
        ("task.txt", GOOD, "expected a Python task file (.py)"),
        ("task.py", GOOD.replace('objectives = ("accuracy", "simplicity")', 'objectives = "accuracy"'),
         "objectives: expected a tuple of names"),
        ("task.py", GOOD + "\nraise RuntimeError('no data here')\n", "raised RuntimeError: no data here"),
    ],
)  # fmt: skip
def test_bad_task_files_give_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, expected: str
) -> None:
    code = _solve(tmp_path, _bad(tmp_path, name, text))
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and expected in lines[0], err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_solve_refuses_an_llm_flag_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _solve(tmp_path, TASK, "--base-url", "http://127.0.0.1:9/v1") == 2
    assert "give both" in capsys.readouterr().err


def test_load_task_file_builds_a_task() -> None:
    task = load_task_file(TASK)
    assert task.name == "tiny-regression" and task.objectives == ("accuracy", "simplicity")
    raw = task.evaluate(Candidate.of("polynomial", degree=3))
    y = task.normalise(raw)
    assert y.shape == (2,) and np.all((y >= 0) & (y <= 1))
