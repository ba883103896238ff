"""Interleaved, paired-ratio benchmarks: our implementation against what a user would run.

On a shared, busy machine two timings taken minutes apart measure the load as much as
the code. Here the candidate and its peers alternate inside one process: every repeat
times each function once, in an order rotated from repeat to repeat, so load drifts hit
all of them alike, and the ratio is formed WITHIN a repeat (``peer / candidate``) before
the median over repeats is taken. Threads are pinned (torch, BLAS, OpenMP) through
`shared_core.device.limit_threads`, one by default. Both CPU time (the process's, which
a busy neighbour inflates far less) and wall time are recorded; on a GPU pass `sync`
(e.g. ``torch.cuda.synchronize``) and compare wall times.

    results = measure({"ours": f, "fla naive": g}, repeats=15)
    table = BenchTable("chunkwise Mesa forward", candidate="ours")
    table.add("T=512", results)
    table.print(); table.write_json("bench.json")
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from shared_core.atomic import atomic_write_text
from shared_core.device import limit_threads

CLOCKS = ("cpu", "wall")


@dataclass(frozen=True)
class Measurement:
    """Seconds per call of one function, one entry per repeat."""

    name: str
    cpu: tuple[float, ...]
    wall: tuple[float, ...]
    number: int  # calls per timed block

    def median(self, clock: str = "cpu") -> float:
        return statistics.median(self._times(clock))

    def _times(self, clock: str) -> tuple[float, ...]:
        if clock not in CLOCKS:
            raise ValueError(f"clock: expected one of {CLOCKS}, got {clock!r}")
        return self.cpu if clock == "cpu" else self.wall


@dataclass(frozen=True)
class Ratio:
    """Per-repeat ratios ``peer time / candidate time`` (> 1: the candidate is faster)."""

    median: float
    min: float
    max: float


def paired_ratio(candidate: Measurement, peer: Measurement, clock: str = "cpu") -> Ratio:
    """Median, min and max over repeats of ``peer / candidate`` timed in the same repeat."""
    a, b = candidate._times(clock), peer._times(clock)
    if len(a) != len(b) or not a:
        raise ValueError("peer: the two measurements must come from the same `measure` call")
    ratios = [p / c if c > 0 else float("inf") for c, p in zip(a, b, strict=True)]
    return Ratio(statistics.median(ratios), min(ratios), max(ratios))


def _calibrate(fn: Callable[[], object], sync: Callable[[], None], min_time: float) -> int:
    """Calls per timed block so that one block lasts at least `min_time` seconds."""
    number = 1
    while True:
        sync()
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        dt = time.perf_counter() - t0
        if dt >= min_time or number >= 1 << 20:
            return number
        number = max(number * 2, int(number * min_time / max(dt, 1e-9)) + 1)


def measure(
    fns: Mapping[str, Callable[[], object]],
    *,
    repeats: int = 15,
    warmup: int = 1,
    min_time: float = 0.02,
    threads: int = 1,
    sync: Callable[[], None] | None = None,
) -> dict[str, Measurement]:
    """Time every function in `fns`, interleaved, `repeats` times; return seconds per call.

    Each function first runs `warmup` times; each is then called `number` times per timed
    block, `number` chosen (per function) so that a block lasts at least `min_time`.
    """
    if not fns:
        raise ValueError("fns: expected at least one function to time")
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats: expected a positive int, got {repeats!r}")
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup: expected a non-negative int, got {warmup!r}")
    sync = sync or (lambda: None)
    names = list(fns)
    cpu: dict[str, list[float]] = {n: [] for n in names}
    wall: dict[str, list[float]] = {n: [] for n in names}
    with limit_threads(threads):
        for name in names:
            for _ in range(warmup):
                fns[name]()
        number = {n: _calibrate(fns[n], sync, min_time) for n in names}
        for r in range(repeats):
            k = r % len(names)
            for name in names[k:] + names[:k]:
                fn, m = fns[name], number[name]
                sync()
                c0, t0 = time.process_time(), time.perf_counter()
                for _ in range(m):
                    fn()
                sync()
                wall[name].append((time.perf_counter() - t0) / m)
                cpu[name].append((time.process_time() - c0) / m)
    return {n: Measurement(n, tuple(cpu[n]), tuple(wall[n]), number[n]) for n in names}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g}"


@dataclass
class BenchTable:
    """Rows of one benchmark: a setting each, the candidate's time and its ratio to each peer."""

    title: str
    candidate: str
    clock: str = "cpu"
    rows: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.clock not in CLOCKS:
            raise ValueError(f"clock: expected one of {CLOCKS}, got {self.clock!r}")

    def add(self, setting: str, results: Mapping[str, Measurement]) -> dict[str, Any]:
        """Add the row of `setting` from one `measure` result (which must time the candidate)."""
        if self.candidate not in results:
            raise ValueError(f"results: no entry for the candidate {self.candidate!r}")
        ours = results[self.candidate]
        row: dict[str, Any] = {
            "setting": setting,
            "times_ms": {n: m.median(self.clock) * 1e3 for n, m in results.items()},
            "speedup": {
                n: asdict(paired_ratio(ours, m, self.clock))
                for n, m in results.items()
                if n != self.candidate
            },
            "repeats": len(ours.cpu),
        }
        self.rows.append(row)
        return row

    def markdown(self) -> str:
        """A table: times (ms, median) and the speed-up of the candidate over each peer."""
        peers: list[str] = []
        for row in self.rows:
            peers += [p for p in row["speedup"] if p not in peers]
        head = ["setting", f"{self.candidate} (ms)"]
        head += [f"{p} (ms)" for p in peers]
        head += [f"speed-up vs {p}" for p in peers]
        lines = [
            f"**{self.title}**: {self.clock} time per call, median of interleaved repeats; "
            f"speed-up = peer time / {self.candidate} time in the same repeat "
            "(> 1: ours is faster), median [min-max]",
            "",
            "| " + " | ".join(head) + " |",
            "|" + "---|" * len(head),
        ]
        for row in self.rows:
            t = row["times_ms"]
            cells = [row["setting"], f"{t[self.candidate]:.3g}"]
            cells += [f"{t[p]:.3g}" if p in t else "" for p in peers]
            for p in peers:
                s = row["speedup"].get(p)
                cells.append(f"{s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}]" if s else "")
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def print(self) -> None:
        print(self.markdown(), flush=True)

    def write_json(self, path: str | Path) -> Path:
        """Write the rows and settings as JSON (atomically)."""
        payload = {"title": self.title, "candidate": self.candidate, "clock": self.clock}
        payload["rows"] = self.rows  # type: ignore[assignment]
        return atomic_write_text(Path(path), json.dumps(payload, indent=2) + "\n")


def train_step(model: Any, loss: Callable[[Any], Any], lr: float = 1e-4) -> Callable[[], None]:
    """A timed training step: ``loss(model)``, backward, and an AdamW step (its own optimiser,
    the benchmark's, not a package's recipe); returns the no-argument callable `measure` times."""
    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=lr)

    def step() -> None:
        out = loss(model)
        opt.zero_grad()
        out.backward()
        opt.step()

    return step


def bench_parser(description: str) -> argparse.ArgumentParser:
    """The options every ``benchmarks/bench_*.py`` takes (defaults shown in ``--help``)."""
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--repeats", type=int, default=15, help="interleaved repeats per setting")
    p.add_argument("--threads", type=int, default=1, help="torch/BLAS/OpenMP threads")
    p.add_argument("--quick", action="store_true", help="fewer settings and repeats (smoke run)")
    p.add_argument("--json", type=Path, default=None, help="also write the table as JSON here")
    return p


def finish(tables: Sequence[BenchTable], json_path: Path | None) -> None:
    """Print every table; write them all to `json_path` if given."""
    for t in tables:
        t.print()
        print()
    if json_path is not None:
        payload = [
            {"title": t.title, "candidate": t.candidate, "clock": t.clock, "rows": t.rows}
            for t in tables
        ]
        atomic_write_text(json_path, json.dumps(payload, indent=2) + "\n")
