"""Run reports: ``runs/<package>/<UTC timestamp>/`` with metrics.json, report.md and PNG plots.

Every file is written atomically, so an interrupted run leaves whole files or none.
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared_core.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text
from shared_core.device import environment

_NOT_APPLICABLE, _NOT_A_NUMBER = "–", "n/a"


def _fmt(value: Any, digits: int) -> str:
    if value is None:
        return _NOT_APPLICABLE
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return _NOT_A_NUMBER
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 10 ** -(digits - 1)):
            return f"{value:.{digits}g}"
        return (
            f"{value:.{digits}f}".rstrip("0").rstrip(".")
            if "." in f"{value:.{digits}f}"
            else str(value)
        )
    return str(value)


def markdown_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None, digits: int = 4
) -> str:
    """A GitHub-markdown table of `rows`; `columns` defaults to the keys in first-seen order.

    A missing key is an empty cell; a ``None`` value prints as ``–`` (not applicable to this
    row) and a NaN as ``n/a``, and a line under the table says so, so no cell reads ``None``
    or ``nan`` unexplained.
    """
    if not rows:
        raise ValueError("rows: expected at least one row")
    bad = [type(r).__name__ for r in rows if not isinstance(r, Mapping)]
    if bad:
        raise TypeError(f"rows: expected mappings (one dict per row), got {bad[0]}")
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    lines = [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join(" --- " for _ in columns) + "|",
    ]
    cells = [[_fmt(r.get(c, ""), digits) for c in columns] for r in rows]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    used = {cell for row in cells for cell in row}
    legend = [
        text
        for mark, text in (
            (_NOT_APPLICABLE, f"{_NOT_APPLICABLE}: not applicable to that row"),
            (_NOT_A_NUMBER, f"{_NOT_A_NUMBER}: not a number (the metric is undefined there)"),
        )
        if mark in used
    ]
    if legend:
        lines += ["", "; ".join(legend) + "."]
    return "\n".join(lines)


def _config_dict(config: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    return dict(config)


_CONTEXT: dict[str, Any] = {}
_OPEN: list[Run] = []


def set_run_context(**context: Any) -> None:
    """Settings every `Run` records beside its config (the CLI sets threads, device, seed, scale)."""
    _CONTEXT.clear()
    _CONTEXT.update(context)


def fail_open_runs(reason: str) -> list[Path]:
    """Mark every run not yet finished as failed (the CLI calls this on an error or Ctrl-C)."""
    return [run.fail(reason) for run in list(_OPEN)]


def _readable_log_x(axis: Any) -> None:
    """Keep a log x axis's tick labels apart: over half a decade to two decades matplotlib labels
    minor ticks too (3x10^3, 4x10^3, 6x10^3, ...), and side by side those labels overlap; there
    the labelled ticks become 1, 2 and 5 x 10^k in plain numbers (2000, 5000, 10000) and minor
    ticks go unlabelled. Narrower and wider axes keep matplotlib's labels (a y axis stacks its
    labels and is left alone)."""
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    lo, hi = axis.get_view_interval()
    if 0 < lo < hi and 0.5 <= math.log10(hi / lo) < 2:
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


class Run:
    """One reproducible run: a folder, its config, environment, metrics, tables and plots.

    ``Run(package, config)`` creates ``<out>/<package>/<UTC timestamp>[-<scale>][-<name>]/``
    (scale and name from the run context the ``reproduce`` command sets) and writes
    ``config.json`` at once (``"status": "running"``, with the run context: threads, device,
    seed, scale); `log` and `add_row` accumulate results; `plot` writes PNGs; `finish` writes
    ``metrics.json`` and ``report.md`` and marks the run ``"complete"``. A run that ends in
    an exception (``with Run(...) as run:``, or the CLI's handler) is marked ``"failed"``
    and its folder renamed ``<timestamp>-failed``. Set ``enabled=False`` on non-main ranks:
    nothing is written, calls are no-ops.
    """

    def __init__(
        self,
        package: str,
        config: Any,
        out: str | Path = "runs",
        enabled: bool = True,
        timestamp: str | None = None,
    ) -> None:
        self.package = package
        self.config = _config_dict(config)
        self.enabled = enabled
        self.started = time.time()
        self.cpu_started = time.process_time()
        self.children_cpu_started = _children_cpu()
        stamp = timestamp or datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        # <timestamp>-<scale or verb>[-<name>], so micro, tiny, train and named runs are told apart
        suffix = [str(_CONTEXT[k]) for k in ("scale", "command", "name") if _CONTEXT.get(k)]
        self.dir = Path(out) / package / "-".join([stamp, *suffix])
        self.metrics: dict[str, Any] = {}
        self.rows: list[dict[str, Any]] = []
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.plots: list[tuple[str, Path]] = []
        self.environment = environment()
        self.context = dict(_CONTEXT)
        self.status = "running"
        if enabled:
            self.dir.mkdir(parents=True, exist_ok=False)
            self._write_config()
            _OPEN.append(self)

    def _write_config(self) -> None:
        atomic_write_json(
            self.dir / "config.json",
            {
                "package": self.package,
                "status": self.status,
                "run": self.context,
                "config": self.config,
            },
        )

    def __enter__(self) -> Run:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        if kind is not None and self in _OPEN:
            self.fail(f"{kind.__name__}: {exc}")

    def fail(self, reason: str) -> Path:
        """Mark the run failed: status and reason in config.json, folder renamed ``*-failed``."""
        if self in _OPEN:
            _OPEN.remove(self)
        if not self.enabled or not self.dir.exists():
            return self.dir
        self.status = "failed"
        self.context["failure"] = reason
        self._write_config()
        failed = self.dir.with_name(self.dir.name + "-failed")
        self.dir.rename(failed)
        self.dir = failed
        return failed

    def log(self, **metrics: Any) -> None:
        """Record named scalar (or JSON-able) results."""
        self.metrics.update(metrics)

    def add_row(self, table: str = "results", **row: Any) -> None:
        """Append one row (e.g. ``method="mesa", loss=1.2``) to a named table of the report."""
        self.tables.setdefault(table, []).append(dict(row))

    def plot(
        self,
        name: str,
        series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
        *,
        xlabel: str,
        ylabel: str,
        title: str = "",
        logx: bool = False,
        logy: bool = False,
        kind: str = "line",
        integer_x: bool = False,
        xticks: Sequence[float] | None = None,
        styles: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Path:
        """Draw one PNG ``<name>.png``: a line (or ``kind="scatter"``) per labelled ``(x, y)`` series.

        `integer_x` puts ticks at whole numbers only (steps, layers, seeds); `xticks` puts them
        at exactly these x values, labelled in plain numbers, on any scale (pair counts 4, 8, 16 on
        a log axis); `styles` maps a
        series label to matplotlib keyword arguments for it (``{"ours": {"linestyle": "--"}}``),
        overriding the defaults.
        """
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        if kind not in ("line", "scatter"):
            raise ValueError(f"kind: expected 'line' or 'scatter', got {kind!r}")
        if xticks is not None and integer_x:
            raise ValueError("xticks: give either xticks or integer_x=True, not both")
        styles = styles or {}
        unknown = sorted(set(styles) - set(series))
        if unknown:
            raise ValueError(f"styles: labels {unknown} are not series of {sorted(series)}")
        fig, ax = plt.subplots(figsize=(7.5 if len(series) > 1 else 6, 4), dpi=120)
        for label, (x, y) in series.items():
            if kind == "line":
                ax.plot(
                    x,
                    y,
                    **{"marker": "o", "markersize": 3, "label": label, **styles.get(label, {})},
                )
            else:
                ax.scatter(x, y, **{"s": 4, "alpha": 0.6, "label": label, **styles.get(label, {})})
        if integer_x:
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title or name)
        if logx:
            ax.set_xscale("log")
            _readable_log_x(ax.xaxis)
        if logy:
            ax.set_yscale("log")
        if xticks is not None:
            ax.set_xticks(list(xticks), [f"{t:g}" for t in xticks])
            ax.minorticks_off()
        if len(series) > 1:  # outside the axes, so it never hides data
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=8)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        return self.save_figure(name, fig)

    def save_figure(self, name: str, fig: Any) -> Path:
        """Save a matplotlib figure the caller built as ``<name>.png`` (atomically) and close it."""
        import matplotlib.pyplot as plt

        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        plt.close(fig)
        path = self.dir / f"{name}.png"
        if self.enabled:
            atomic_write_bytes(path, buf.getvalue())
            self.plots.append((name, path))
        return path

    def finish(self, title: str | None = None, notes: str = "", print_tables: bool = True) -> Path:
        """Write ``metrics.json`` and ``report.md``; print the tables; return the run folder."""
        elapsed = time.time() - self.started
        cpu = time.process_time() - self.cpu_started
        children = _children_cpu() - self.children_cpu_started
        if print_tables:
            for name, rows in self.tables.items():
                print(f"\n{name}\n{markdown_table(rows)}")
        if self in _OPEN:
            _OPEN.remove(self)
        if not self.enabled:
            return self.dir
        self.status = "complete"
        self._write_config()
        atomic_write_json(
            self.dir / "metrics.json",
            {
                "package": self.package,
                "run": self.context,
                "config": self.config,
                "metrics": self.metrics,
                "tables": self.tables,
                "elapsed_s": elapsed,
                "cpu_s": cpu,
                "cpu_children_s": children,
                "environment": self.environment,
            },
        )
        parts = [f"# {title or self.package + ' reproduce'}", ""]
        if notes:
            parts += [notes.strip(), ""]
        for name, rows in self.tables.items():
            parts += [f"## {name}", "", markdown_table(rows), ""]
        if self.metrics:
            scalars = [{"metric": k, "value": v} for k, v in self.metrics.items() if _is_scalar(v)]
            if scalars:
                parts += ["## Metrics", "", markdown_table(scalars), ""]
        for name, path in self.plots:
            parts += [f"![{name}]({path.name})", ""]
        parts += [
            "## Configuration",
            "",
            "```json",
            _json({"run": self.context, "config": self.config}),
            "```",
            "",
            f"Wall time {elapsed:.1f} s, CPU time {cpu:.1f} s"
            f"{f' (+ {children:.1f} s in child processes)' if children > 0 else ''}. Environment: python {self.environment['python']}, "
            f"{', '.join(f'{k} {v}' for k, v in self.environment['versions'].items())}; "
            f"commit {self.environment.get('git_commit') or 'unknown'}.",
            "",
        ]
        atomic_write_text(self.dir / "report.md", "\n".join(parts))
        print(f"\nreport: {self.dir / 'report.md'}")
        return self.dir


def _children_cpu() -> float:
    """User + system CPU seconds of the process's finished (waited-for) child processes."""
    t = os.times()
    return t.children_user + t.children_system


def _is_scalar(v: Any) -> bool:
    return isinstance(v, (int, float, str, bool)) or (
        hasattr(v, "item") and getattr(v, "ndim", 1) == 0
    )


def _json(obj: Any) -> str:
    import json

    from shared_core.atomic import _jsonable

    return json.dumps(obj, indent=2, default=_jsonable)
