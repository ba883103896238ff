import json

import pytest

from shared_core.atomic import atomic_write, atomic_write_text
from shared_core.report import Run, markdown_table


def test_run_writes_metrics_report_and_png(tmp_path):
    run = Run("demo", {"lr": 0.1, "steps": 3}, out=tmp_path)
    assert run.dir.parent == tmp_path / "demo"
    run.add_row(method="mesa", loss=1.25)
    run.add_row(method="baseline", loss=2.5)
    run.log(ratio=2.0)
    png = run.plot("loss", {"mesa": ([1, 2, 3], [3, 2, 1])}, xlabel="step", ylabel="loss")
    out = run.finish(title="Demo")
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["metrics"]["ratio"] == 2.0
    assert metrics["tables"]["results"][1] == {"method": "baseline", "loss": 2.5}
    assert metrics["config"] == {"lr": 0.1, "steps": 3}
    report = (out / "report.md").read_text()
    assert "| mesa | 1.25 |" in report and "![loss](loss.png)" in report
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_disabled_run_writes_nothing(tmp_path):
    run = Run("demo", {}, out=tmp_path, enabled=False)
    run.add_row(method="x", v=1)
    run.finish(print_tables=False)
    assert not (tmp_path / "demo").exists()


def test_interrupted_write_leaves_old_file_and_no_temp(tmp_path):
    target = tmp_path / "metrics.json"
    atomic_write_text(target, '{"old": true}')

    def half_then_interrupt(f):
        f.write(b'{"new": ')
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, half_then_interrupt)
    assert target.read_text() == '{"old": true}'
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


def test_markdown_table():
    table = markdown_table([{"a": 1, "b": 0.5}, {"a": 2}])
    assert table.splitlines() == ["| a | b |", "| --- | --- |", "| 1 | 0.5 |", "| 2 |  |"]
    with pytest.raises(ValueError, match="rows"):
        markdown_table([])
    # issue 46: None and NaN cells are marked and explained, never printed raw
    table = markdown_table([{"a": None, "b": float("nan")}, {"a": 1.0, "b": 2}])
    assert "None" not in table and "nan" not in table
    assert table.splitlines()[2] == "| – | n/a |"
    assert table.splitlines()[-1] == (
        "–: not applicable to that row; n/a: not a number (the metric is undefined there)."
    )


def test_run_records_context_and_status(tmp_path):
    from shared_core.report import set_run_context

    set_run_context(scale="micro", device="cpu", seed=5, threads=1)
    try:
        run = Run("demo", {"a": 1}, out=tmp_path)
        assert json.loads((run.dir / "config.json").read_text())["status"] == "running"
        out = run.finish(print_tables=False)
    finally:
        set_run_context()
    config = json.loads((out / "config.json").read_text())
    metrics = json.loads((out / "metrics.json").read_text())
    assert config["status"] == "complete"
    assert (
        config["run"]
        == metrics["run"]
        == {"scale": "micro", "device": "cpu", "seed": 5, "threads": 1}
    )
    assert metrics["cpu_s"] >= 0 and metrics["elapsed_s"] >= 0


def test_run_failed_inside_with_is_marked_and_renamed(tmp_path):
    with pytest.raises(RuntimeError), Run("demo", {}, out=tmp_path) as run:
        raise RuntimeError("diverged")
    assert run.dir.name.endswith("-failed") and run.dir.is_dir()
    config = json.loads((run.dir / "config.json").read_text())
    assert config["status"] == "failed" and "diverged" in config["run"]["failure"]


def test_outputs_follow_the_umask(tmp_path):
    import os

    old = os.umask(0o022)
    try:
        path = atomic_write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


def test_run_records_child_process_cpu(tmp_path):
    import subprocess
    import sys

    run = Run("demo", {}, out=tmp_path)
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass",
        ],
        check=True,
    )
    out = run.finish(print_tables=False)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["cpu_children_s"] >= 0.25
    assert "in child processes" in (out / "report.md").read_text()


def test_plot_integer_ticks_and_styles(tmp_path):
    run = Run("demo", {}, out=tmp_path)
    series = {"ours": ([1, 2, 3], [1.0, 2.0, 1.5]), "base": ([1, 2, 3], [2.0, 2.0, 2.0])}
    png = run.plot(
        "s", series, xlabel="seed", ylabel="v", integer_x=True, styles={"base": {"linestyle": "--"}}
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="styles"):
        run.plot("t", series, xlabel="x", ylabel="y", styles={"nope": {}})


def test_plot_xticks_exactly_where_asked(tmp_path, monkeypatch):
    run = Run("demo", {}, out=tmp_path)
    figures = []
    monkeypatch.setattr(run, "save_figure", lambda name, fig: figures.append(fig) or tmp_path)
    series = {"ours": ([4, 8, 16, 32], [0.9, 0.8, 0.6, 0.4])}
    run.plot("kv", series, xlabel="pairs", ylabel="acc", logx=True, xticks=[4, 8, 16, 32])
    ax = figures[0].axes[0]
    assert list(ax.get_xticks()) == [4, 8, 16, 32]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["4", "8", "16", "32"]
    assert ax.get_xscale() == "log"
    with pytest.raises(ValueError, match="xticks"):
        run.plot("t", series, xlabel="x", ylabel="y", xticks=[1], integer_x=True)


def test_plot_log_axis_labels_major_ticks_only(tmp_path, monkeypatch):
    """A log x axis over 1.4 decades gets no minor-tick labels (they overlapped in pgm-diffusion's
    throughput plot) but plain 1-2-5 labels; a wide one keeps its labelled powers of ten."""
    run = Run("demo", {}, out=tmp_path)
    figures = []
    monkeypatch.setattr(run, "save_figure", lambda name, fig: figures.append(fig) or tmp_path)
    y = [1.0, 2.0, 3.0, 4.0]
    for x in ([3.0e3, 8.0e3, 1.5e4, 7.0e4], [1e-3, 1e-1, 1e1, 1e3]):
        run.plot("q", {"a": (x, y)}, xlabel="x", ylabel="y", logx=True, logy=True)
    narrow, wide = (f.axes[0] for f in figures)
    for fig in figures:
        fig.canvas.draw()

    def shown(ax):
        lo, hi = ax.get_xlim()
        ticks = zip(ax.get_xticks(), ax.get_xticklabels(), strict=True)
        return [label.get_text() for t, label in ticks if lo <= t <= hi and label.get_text()]

    assert shown(narrow) == ["5000", "10000", "20000", "50000"]
    assert len(shown(wide)) >= 3 and all("10^" in s for s in shown(wide)), shown(wide)
    for ax in (narrow, wide):
        assert all(t.get_text() == "" for t in ax.get_xminorticklabels())
