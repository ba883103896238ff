"""The noise-injection grid: one cell = one training run, logged as one (N, D, Q, loss) CSV row.

`run_grid` is resumable: cells whose key is already in the CSV are skipped, and each finished
cell is appended atomically (the whole file is rewritten to a temporary file and renamed), so
an interrupted grid leaves a valid CSV with every finished cell exactly once.
"""

from __future__ import annotations

import csv
import io
import math
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from functools import cache, partial
from pathlib import Path
from typing import Any

import numpy as np

from quality_scaling.data import (
    CORRUPTIONS,
    MarkovSource,
    TransductionTask,
    corrupt,
    shakespeare_tokens,
    text_sequences,
)
from quality_scaling.laws import ScalingData
from quality_scaling.quality import (
    corruption_rate_proxy,
    deficiency_q,
    markov_deficiency,
    markov_noisy_floor,
    ngram_pairs,
)
from shared_core.atomic import atomic_write_text
from shared_core.cli import progress
from shared_core.data import require_extra
from shared_core.device import limit_threads

__all__ = ["TASKS", "Cell", "make_cells", "read_rows", "rows_to_data", "run_cell", "run_grid"]

TASKS = ("markov", "shakespeare", "seq2seq")
Q_COLUMNS = ("q_proxy", "q_deficiency", "q_deficiency_ratio", "q_exact", "q_exact_ratio")
"""Q estimates of a row: 1 - p; deficiency exp(-Delta) (paper) and the information ratio (ours),
plug-in and, on the Markov source under substitution or sample corruption, exact."""
SEQ_LEN = 16
TEST_ROWS = 1024


@dataclass(frozen=True)
class Cell:
    """One run: `task`, `corruption` of the training data at `rate`, width `d_model`, D = `tokens`."""

    task: str
    corruption: str
    rate: float
    d_model: int
    tokens: int
    seed: int = 0
    n_layer: int = 1
    lr: float = 1e-2
    batch_size: int = 8

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task: expected one of {TASKS}, got {self.task!r}")
        if self.corruption not in CORRUPTIONS:
            raise ValueError(f"corruption: expected one of {CORRUPTIONS}, got {self.corruption!r}")
        corruption_rate_proxy(self.rate)
        if not isinstance(self.tokens, int) or self.tokens < SEQ_LEN * self.batch_size:
            raise ValueError(f"tokens: expected >= {SEQ_LEN * self.batch_size}, got {self.tokens}")
        for name in ("d_model", "n_layer", "tokens", "batch_size", "seed"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < (0 if name == "seed" else 1):
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        heads = max(1, self.d_model // 16)
        if self.d_model % heads:
            raise ValueError(
                f"d_model: expected a multiple of its head count max(1, d_model // 16) = {heads}, "
                f"got {self.d_model}"
            )
        if not (isinstance(self.lr, (int, float)) and 0 < self.lr < math.inf):
            raise ValueError(f"lr: expected a finite number > 0, got {self.lr!r}")

    @property
    def key(self) -> str:
        return "|".join(str(v) for v in asdict(self).values())


def make_cells(
    task: str,
    corruption: str,
    rates: Iterable[float],
    d_models: Iterable[int],
    tokens: Iterable[int],
    seed: int = 0,
) -> list[Cell]:
    """The Cartesian grid of cells, rates x widths x token budgets."""
    return [
        Cell(task, corruption, float(r), int(d), int(t), seed)
        for r in rates
        for d in d_models
        for t in tokens
    ]


def _seed(*parts: Any) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode())


@cache
def _task(task: str) -> dict[str, Any]:
    """The clean data of a task: a train sampler, a fixed clean test set, vocab, mask, floor."""
    rng = np.random.default_rng(_seed(task, "test"))
    if task == "markov":
        src = MarkovSource(vocab_size=32, concentration=0.3, order=1, seed=0)
        return {
            "vocab": 32,
            "test": src.sample(TEST_ROWS, SEQ_LEN, rng),
            "sample": lambda n, r: src.sample(n, SEQ_LEN, r),
            "mask": None,
            "floor": src.irreducible_loss(SEQ_LEN),
            "source": src,
        }
    if task == "shakespeare":
        tokens, vocab = shakespeare_tokens()
        cut = int(0.9 * len(tokens))
        train, test = tokens[:cut], tokens[cut:]
        return {
            "vocab": vocab,
            "test": text_sequences(test, TEST_ROWS, SEQ_LEN, rng),
            "sample": lambda n, r: text_sequences(train, n, SEQ_LEN, r),
            "mask": None,
            "floor": float("nan"),
        }
    t = TransductionTask(vocab_size=16, length=SEQ_LEN // 2, channel=0.05)
    return {
        "vocab": t.total_vocab,
        "test": t.sample(TEST_ROWS, rng),
        "sample": lambda n, r: t.sample(n, r),
        "mask": t.target_mask(),
        "floor": t.irreducible_loss,
        "transduction": t,
    }


def _pairs(task: dict[str, Any], seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if "transduction" in task:  # target j is the cipher of source L-1-j
        n = task["transduction"].length
        return seqs[:, :n][:, ::-1].ravel(), seqs[:, n + 1 :].ravel()
    return ngram_pairs(seqs, order=1, vocab_size=task["vocab"])


def run_cell(cell: Cell, device: str = "cpu") -> dict[str, Any]:
    """Train one cell; return its CSV row: the cell, N, D, the Q estimates (`Q_COLUMNS`), the
    clean-test loss, the entropy floor and (Markov, substitution or samples) the noisy Bayes floor."""
    require_extra("quality-scaling", "torch", "torch", "the tiny-GPT grid")
    from quality_scaling.model import GPTConfig
    from quality_scaling.train import TrainConfig, train_run

    task = _task(cell.task)
    rng = np.random.default_rng(_seed(cell.task, cell.seed, "train"))
    clean = task["sample"](cell.tokens // SEQ_LEN, rng)
    positions = None
    if task["mask"] is not None:  # seq2seq: noise goes into the targets only
        positions = np.concatenate([[False], task["mask"]])
    noisy = corrupt(
        clean,
        cell.corruption,
        cell.rate,
        task["vocab"] if task["mask"] is None else task["vocab"] - 1,
        np.random.default_rng(_seed(cell.key, "noise")),
        positions,
    )
    cfg = GPTConfig(task["vocab"], SEQ_LEN, cell.d_model, cell.n_layer, max(1, cell.d_model // 16))
    with limit_threads(1):  # models of a few thousand parameters: more threads only contend
        out = train_run(
            cfg,
            noisy,
            task["test"],
            TrainConfig(batch_size=cell.batch_size, lr=cell.lr, seed=cell.seed, device=device),
            task["mask"],
            desc=f"{cell.task} train",
        )
    pairs = (_pairs(task, noisy), _pairs(task, clean), _pairs(task, task["test"]), task["vocab"])
    exact = cell.task == "markov" and cell.corruption in ("substitute", "samples")
    nan = float("nan")
    row: dict[str, Any] = {"key": cell.key, **asdict(cell)}
    row.update(
        N=out["n_params"],
        N_non_embedding=out["n_params_non_embedding"],
        D=float(cell.tokens),
        q_proxy=corruption_rate_proxy(cell.rate),
        q_deficiency=deficiency_q(*pairs),
        q_deficiency_ratio=deficiency_q(*pairs, definition="ratio"),
        q_exact=markov_deficiency(task["source"], cell.rate, "paper", cell.corruption)
        if exact
        else nan,
        q_exact_ratio=markov_deficiency(task["source"], cell.rate, "ratio", cell.corruption)
        if exact
        else nan,
        loss=out["loss"],
        floor=task["floor"],
        floor_noisy=markov_noisy_floor(task["source"], cell.rate, cell.corruption, SEQ_LEN + 1)
        if exact
        else nan,
    )
    return row


COLUMNS = [
    "key",
    *(f.name for f in fields(Cell)),
    "N",
    "N_non_embedding",
    "D",
    "q_proxy",
    "q_deficiency",
    "q_deficiency_ratio",
    "q_exact",
    "q_exact_ratio",
    "loss",
    "floor",
    "floor_noisy",
]


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a grid CSV (numbers parsed); ``[]`` if the file does not exist."""
    p = Path(path)
    if not p.exists():
        return []
    with open(p, newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        parsed: dict[str, Any] = {}
        for k, v in r.items():
            try:
                parsed[k] = float(v) if k not in ("key", "task", "corruption") else v
            except ValueError:
                parsed[k] = v
        out.append(parsed)
    return out


def _append_atomic(path: Path, row: dict[str, Any]) -> None:
    old = path.read_text() if path.exists() else ""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    if not old:
        w.writeheader()
    w.writerow(row)
    atomic_write_text(path, old + buf.getvalue())


def run_grid(
    cells: Sequence[Cell],
    csv_path: str | Path,
    workers: int = 1,
    runner: Callable[[Cell], dict[str, Any]] | None = None,
    show_progress: bool = True,
    device: str = "cpu",
) -> list[dict[str, Any]]:
    """Run every cell not yet in `csv_path`; append each result atomically; return all rows of `cells`.

    `workers` > 1 runs cells in that many processes (results are written by this process only).
    Each cell trains on `device` (`run_cell`). `runner` replaces `run_cell` (tests use it to
    interrupt a grid).
    """
    path = Path(csv_path)
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers: expected a positive int, got {workers!r}")
    cells = list(cells)
    bad = [c for c in cells if not isinstance(c, Cell)]
    if bad:
        raise TypeError(f"cells: expected Cell objects, got {type(bad[0]).__name__}")
    done = {r["key"] for r in read_rows(path)}
    todo = [c for c in dict.fromkeys(cells) if c.key not in done]
    if runner is not None or workers == 1 or len(todo) <= 1:
        call = runner or partial(run_cell, device=device)
        results: Iterable[dict[str, Any]] = (call(c) for c in todo)
        for row in progress(results, desc="grid", total=len(todo), enabled=show_progress):
            _append_atomic(path, row)
    else:
        import multiprocessing as mp

        with mp.get_context("spawn").Pool(workers) as pool:
            for row in progress(
                pool.imap_unordered(partial(run_cell, device=device), todo),
                desc="grid",
                total=len(todo),
                enabled=show_progress,
            ):
                _append_atomic(path, row)
    wanted = {c.key for c in cells}
    return [r for r in read_rows(path) if r["key"] in wanted]


def rows_to_data(rows: Sequence[dict[str, Any]], q: str = "q_proxy") -> ScalingData:
    """Grid rows -> `ScalingData` with Q taken from column `q` (``q_proxy``, ``q_deficiency``, ...)."""
    if not rows:
        raise ValueError("rows: expected at least one grid row")
    if q not in Q_COLUMNS:
        raise ValueError(f"q: expected one of the Q columns {Q_COLUMNS}, got {q!r}")
    missing = [i for i, r in enumerate(rows) if not all(k in r for k in ("N", "D", "loss", q))]
    if missing:
        raise ValueError(
            f"rows: row {missing[0]} lacks one of the columns N, D, loss, {q} (expected grid rows)"
        )
    col = np.array([r[q] for r in rows], dtype=float)
    if np.any(col <= 0):  # a deficiency of 0 (no information) has no log: floor it at 1e-3
        col = np.maximum(col, 1e-3)
    return ScalingData(
        [r["N"] for r in rows], [r["D"] for r in rows], [r["loss"] for r in rows], col
    )
