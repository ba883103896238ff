"""Every public entry point rejects bad input with a ValueError/TypeError naming the argument.

One case per row: the call, the exception type and a fragment of the message that names the
argument (and, where useful, the value received).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import TRUE, synthetic
from quality_scaling import plan
from quality_scaling.data import MarkovSource, TransductionTask, corrupt, text_sequences
from quality_scaling.fit import (
    bootstrap,
    fit_chinchilla,
    fit_law,
    holdout_error,
    init_grid,
    objective,
    solve_batched,
)
from quality_scaling.grid import Cell, rows_to_data, run_grid
from quality_scaling.laws import CHINCHILLA, QUALITY, ScalingData, get_law
from quality_scaling.quality import (
    corruption_rate_proxy,
    deficiency_q,
    estimate_duplication_rate,
    estimate_substitution_rate,
    markov_deficiency,
    ngram_pairs,
)
from quality_scaling.tables import read_epoch_chinchilla, read_runs_csv

ROWS = synthetic(n=40, seed=0)
FIT = fit_law(ROWS, QUALITY, grid=init_grid(QUALITY, a=(5,), b=(5,), e=(0,), alpha=(0.5,)))
ONE = [1.0, 2.0]
PAIRS = ngram_pairs(np.random.default_rng(0).integers(0, 4, size=(20, 6)), vocab_size=4)

CASES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    # laws.ScalingData
    ("N as strings", lambda: ScalingData(["1e6", "2e6"], ONE, ONE), TypeError, "N: expected"),
    ("N as one string", lambda: ScalingData("abc", [1.0], [1.0]), TypeError, "N: expected"),
    ("D as objects", lambda: ScalingData(ONE, [None, 1.0], ONE), TypeError, "D: expected"),
    (
        "Q > 1",
        lambda: ScalingData(ONE, ONE, ONE, [1.0, 1.5]),
        ValueError,
        "Q: expected values in (0, 1]",
    ),
    ("Q = 0", lambda: ScalingData(ONE, ONE, ONE, [1.0, 0.0]), ValueError, "Q: expected values > 0"),
    ("zero rows", lambda: ScalingData([], [], []), ValueError, "N: expected at least one row"),
    ("NaN loss", lambda: ScalingData(ONE, ONE, [1.0, np.nan]), ValueError, "loss: expected finite"),
    ("inf N", lambda: ScalingData([1.0, np.inf], ONE, ONE), ValueError, "N: expected finite"),
    (
        "negative D",
        lambda: ScalingData(ONE, [1.0, -1.0], ONE),
        ValueError,
        "D: expected values > 0",
    ),
    ("2-D N", lambda: ScalingData([[1.0, 2.0]], ONE, ONE), ValueError, "N: expected a 1-D"),
    ("unequal lengths", lambda: ScalingData(ONE, [1.0], ONE), ValueError, "equal lengths"),
    (
        "subset out of range",
        lambda: ROWS.subset([0, 99]),
        ValueError,
        "index: expected row numbers",
    ),
    ("subset float index", lambda: ROWS.subset([0.5]), TypeError, "index: expected integer"),
    (
        "subset short mask",
        lambda: ROWS.subset(np.ones(3, bool)),
        ValueError,
        "index: expected a boolean mask",
    ),
    # laws.ScalingLaw / get_law
    ("unknown law", lambda: get_law("kaplan"), ValueError, "law: expected one of"),
    ("law not a string", lambda: get_law(3), ValueError, "law: expected one of"),  # type: ignore[arg-type]
    (
        "theta wrong length",
        lambda: QUALITY.natural([1.0, 2.0]),
        ValueError,
        "theta: expected shape",
    ),
    (
        "theta NaN",
        lambda: QUALITY.predict([np.nan] * 6, ROWS),
        ValueError,
        "theta: expected finite",
    ),
    (
        "theta strings",
        lambda: QUALITY.predict(["a"] * 6, ROWS),
        TypeError,
        "theta: expected an array of numbers",
    ),
    (
        "predict on a dict",
        lambda: QUALITY.predict([0.0] * 6, {"N": 1}),
        TypeError,
        "data: expected a ScalingData",
    ),  # type: ignore[arg-type]
    (
        "params missing gamma",
        lambda: QUALITY.theta({"A": 1, "B": 1, "E": 1, "alpha": 1, "beta": 1}),
        ValueError,
        "missing",
    ),
    (
        "params string value",
        lambda: CHINCHILLA.theta({**TRUE, "A": "400"}),
        TypeError,
        "params['A']",
    ),
    ("params E = 0", lambda: CHINCHILLA.theta({**TRUE, "E": 0.0}), ValueError, "params['E']"),
    (
        "params not a mapping",
        lambda: CHINCHILLA.theta([1, 2]),
        TypeError,
        "params: expected a mapping",
    ),  # type: ignore[arg-type]
    # fit
    ("fit a dict", lambda: fit_law({"N": [1]}, QUALITY), TypeError, "data: expected a ScalingData"),  # type: ignore[arg-type]
    (
        "fit too few rows",
        lambda: fit_law(ROWS.subset(np.arange(6)), QUALITY),
        ValueError,
        "expected more rows than",
    ),
    (
        "fit quality law with one Q",
        lambda: fit_law(ScalingData(ROWS.N, ROWS.D, ROWS.loss), "quality"),
        ValueError,
        "fit_chinchilla",
    ),
    ("fit delta 0", lambda: fit_law(ROWS, QUALITY, delta=0.0), ValueError, "delta: expected"),
    (
        "fit delta NaN",
        lambda: fit_law(ROWS, QUALITY, delta=float("nan")),
        ValueError,
        "delta: expected",
    ),
    ("fit level 1", lambda: fit_law(ROWS, QUALITY, level=1.0), ValueError, "level: expected"),
    (
        "fit n_bootstrap -1",
        lambda: fit_law(ROWS, QUALITY, n_bootstrap=-1),
        ValueError,
        "n_bootstrap: expected",
    ),
    (
        "fit n_bootstrap float",
        lambda: fit_law(ROWS, QUALITY, n_bootstrap=2.5),
        ValueError,
        "n_bootstrap: expected",
    ),  # type: ignore[arg-type]
    ("fit polish 0", lambda: fit_law(ROWS, QUALITY, polish=0), ValueError, "polish: expected"),
    ("fit seed -1", lambda: fit_law(ROWS, QUALITY, seed=-1), ValueError, "seed: expected"),
    (
        "fit grid wrong width",
        lambda: fit_law(ROWS, QUALITY, grid=np.zeros((3, 5))),
        ValueError,
        "grid: expected shape",
    ),
    (
        "fit grid empty",
        lambda: fit_law(ROWS, QUALITY, grid=np.zeros((0, 6))),
        ValueError,
        "grid: expected shape",
    ),
    (
        "fit grid NaN",
        lambda: fit_law(ROWS, QUALITY, grid=np.full((2, 6), np.nan)),
        ValueError,
        "grid: expected finite",
    ),
    (
        "fit grid strings",
        lambda: fit_law(ROWS, QUALITY, grid=[["a"] * 6]),
        TypeError,
        "grid: expected a numeric",
    ),
    (
        "fit screen_rows 2",
        lambda: fit_law(ROWS, QUALITY, screen_rows=2),
        ValueError,
        "screen_rows: expected",
    ),
    (
        "fit_chinchilla a list",
        lambda: fit_chinchilla([1, 2, 3]),
        TypeError,
        "data: expected a ScalingData",
    ),  # type: ignore[arg-type]
    (
        "init_grid empty axis",
        lambda: init_grid(QUALITY, a=()),
        ValueError,
        "a: expected a non-empty",
    ),
    (
        "init_grid NaN axis",
        lambda: init_grid(QUALITY, beta=(np.nan,)),
        ValueError,
        "beta: expected finite",
    ),
    (
        "init_grid string axis",
        lambda: init_grid(QUALITY, alpha="abc"),
        ValueError,
        "alpha: expected",
    ),  # type: ignore[arg-type]
    (
        "solve_batched 1-D theta0",
        lambda: solve_batched(np.zeros(6), QUALITY, ROWS),
        ValueError,
        "theta0: expected shape",
    ),
    (
        "solve_batched max_iter 0",
        lambda: solve_batched(np.zeros((1, 6)), QUALITY, ROWS, max_iter=0),
        ValueError,
        "max_iter: expected",
    ),
    (
        "solve_batched weights rows",
        lambda: solve_batched(np.zeros((2, 6)), QUALITY, ROWS, weights=np.ones((3, 40))),
        ValueError,
        "weights: expected",
    ),
    (
        "solve_batched negative weights",
        lambda: solve_batched(np.zeros((1, 6)), QUALITY, ROWS, weights=-np.ones(40)),
        ValueError,
        "weights: expected",
    ),
    (
        "solve_batched screen_ratio 0.5",
        lambda: solve_batched(np.zeros((1, 6)), QUALITY, ROWS, screen_ratio=0.5),
        ValueError,
        "screen_ratio: expected",
    ),
    (
        "objective on a dict",
        lambda: objective(np.zeros(6), QUALITY, {}),
        TypeError,
        "data: expected a ScalingData",
    ),  # type: ignore[arg-type]
    (
        "bootstrap 0 resamples",
        lambda: bootstrap(FIT.theta, QUALITY, ROWS, 0),
        ValueError,
        "n_bootstrap: expected",
    ),
    (
        "bootstrap theta length",
        lambda: bootstrap(FIT.theta[:5], QUALITY, ROWS, 2),
        ValueError,
        "theta: expected shape",
    ),
    ("ci without bootstrap", lambda: FIT.ci, ValueError, "ci: this fit has no bootstrap"),
    (
        "holdout a dict",
        lambda: holdout_error(FIT, {"N": 1}),
        TypeError,
        "data: expected a ScalingData",
    ),  # type: ignore[arg-type]
    (
        "holdout not a fit",
        lambda: holdout_error(FIT.params, ROWS),
        TypeError,
        "fit: expected a FitResult",
    ),  # type: ignore[arg-type]
    # plan
    (
        "plan missing beta",
        lambda: plan.compute_optimal({"A": 1.0, "B": 1.0, "E": 1.0, "alpha": 0.3}, 1e20),
        ValueError,
        "missing ['beta']",
    ),
    (
        "plan string value",
        lambda: plan.compute_optimal({**TRUE, "B": "x"}, 1e20),
        TypeError,
        "params['B']",
    ),
    (
        "plan NaN gamma",
        lambda: plan.compute_optimal({**TRUE, "gamma": np.nan}, 1e20),
        ValueError,
        "params['gamma']",
    ),
    (
        "plan negative alpha",
        lambda: plan.compute_optimal({**TRUE, "alpha": -0.1}, 1e20),
        ValueError,
        "alpha, beta > 0",
    ),
    ("plan C negative", lambda: plan.compute_optimal(TRUE, -1.0), ValueError, "C: expected"),
    (
        "plan C string",
        lambda: plan.compute_optimal(TRUE, "1e20"),
        TypeError,
        "C: expected a number",
    ),  # type: ignore[arg-type]
    (
        "plan Q > 1",
        lambda: plan.compute_optimal(TRUE, 1e20, Q=1.5),
        ValueError,
        "Q: expected a quality in (0, 1]",
    ),
    ("plan Q NaN", lambda: plan.loss(TRUE, 1e6, 1e9, Q=float("nan")), ValueError, "Q: expected"),
    (
        "plan q_to 0",
        lambda: plan.data_equivalent(TRUE, 1e9, 1.0, 0.0),
        ValueError,
        "q_to: expected",
    ),
    ("plan N zero", lambda: plan.loss(TRUE, 0.0, 1e9), ValueError, "N: expected"),
    (
        "plan target NaN",
        lambda: plan.required_model_size(TRUE, float("nan"), 1e9),
        ValueError,
        "target_loss: expected",
    ),
    (
        "plan params a list",
        lambda: plan.loss([1, 2], 1e6, 1e9),
        TypeError,
        "params: expected a mapping",
    ),  # type: ignore[arg-type]
    # quality
    (
        "proxy rate 1",
        lambda: corruption_rate_proxy(1.0),
        ValueError,
        "rate: expected 0 <= rate < 1",
    ),
    ("proxy rate NaN", lambda: corruption_rate_proxy(float("nan")), ValueError, "rate: expected"),
    (
        "proxy rate string",
        lambda: corruption_rate_proxy("0.1"),
        TypeError,
        "rate: expected a number",
    ),
    ("proxy empty", lambda: corruption_rate_proxy([]), ValueError, "rate: expected at least one"),
    (
        "substitution float tokens",
        lambda: estimate_substitution_rate(np.ones((2, 3)), np.ones((2, 3), dtype=int), 4),
        TypeError,
        "tokens: expected integer",
    ),
    (
        "substitution empty tokens",
        lambda: estimate_substitution_rate(
            np.zeros((0, 3), dtype=int), np.ones((2, 3), dtype=int), 4
        ),
        ValueError,
        "tokens: expected a non-empty",
    ),
    (
        "substitution vocab too small",
        lambda: estimate_substitution_rate(np.full((2, 3), 7), np.ones((2, 3), dtype=int), 4),
        ValueError,
        "vocab_size",
    ),
    (
        "substitution vocab bool",
        lambda: estimate_substitution_rate(
            np.ones((2, 3), dtype=int), np.ones((2, 3), dtype=int), True
        ),
        ValueError,
        "vocab_size",
    ),
    (
        "substitution negative ids",
        lambda: estimate_substitution_rate(
            -np.ones((2, 3), dtype=int), np.ones((2, 3), dtype=int), 4
        ),
        ValueError,
        "tokens: expected token ids >= 0",
    ),
    ("duplication no chunk", lambda: estimate_duplication_rate(np.arange(10)), ValueError, "chunk"),
    (
        "duplication stream shorter than chunk",
        lambda: estimate_duplication_rate(np.arange(3), chunk=8),
        ValueError,
        "tokens: expected at least one chunk",
    ),
    (
        "ngram order too large",
        lambda: ngram_pairs(np.zeros((2, 5), dtype=int), order=40),
        ValueError,
        "order",
    ),
    (
        "ngram order float",
        lambda: ngram_pairs(np.zeros((2, 5), dtype=int), order=1.5),
        TypeError,
        "order: expected an int",
    ),  # type: ignore[arg-type]
    (
        "ngram vocab too small",
        lambda: ngram_pairs(np.full((2, 5), 9), vocab_size=4),
        ValueError,
        "vocab_size",
    ),
    (
        "deficiency not pairs",
        lambda: deficiency_q(np.zeros(3), PAIRS, PAIRS, 4),
        TypeError,
        "noisy: expected a (contexts, targets) pair",
    ),  # type: ignore[arg-type]
    (
        "deficiency float targets",
        lambda: deficiency_q(PAIRS, (PAIRS[0], PAIRS[1] * 1.0), PAIRS, 4),
        TypeError,
        "clean: expected 1-D integer",
    ),
    (
        "deficiency short clean",
        lambda: deficiency_q(PAIRS, (PAIRS[0][:5], PAIRS[1][:5]), PAIRS, 4),
        ValueError,
        "clean: expected at least",
    ),
    (
        "deficiency vocab 1",
        lambda: deficiency_q(PAIRS, PAIRS, PAIRS, 1),
        ValueError,
        "vocab_size: expected",
    ),
    (
        "deficiency targets out of vocab",
        lambda: deficiency_q(PAIRS, PAIRS, PAIRS, 3),
        ValueError,
        "targets must lie in",
    ),
    (
        "deficiency smoothing 0",
        lambda: deficiency_q(PAIRS, PAIRS, PAIRS, 4, smoothing=0.0),
        ValueError,
        "smoothing: expected",
    ),
    (
        "markov deficiency order 2",
        lambda: markov_deficiency(MarkovSource(order=2, vocab_size=4), 0.1),
        ValueError,
        "order-1",
    ),
    (
        "markov deficiency not a source",
        lambda: markov_deficiency("markov", 0.1),
        TypeError,
        "source: expected a MarkovSource",
    ),  # type: ignore[arg-type]
    (
        "markov deficiency rate 1",
        lambda: markov_deficiency(MarkovSource(vocab_size=4), 1.0),
        ValueError,
        "rate: expected",
    ),
    # data
    ("markov order 3", lambda: MarkovSource(order=3), ValueError, "order"),
    ("markov vocab 1", lambda: MarkovSource(vocab_size=1), ValueError, "vocab_size"),
    ("markov vocab float", lambda: MarkovSource(vocab_size=8.5), ValueError, "vocab_size"),  # type: ignore[arg-type]
    (
        "markov concentration 0",
        lambda: MarkovSource(concentration=0.0),
        ValueError,
        "concentration",
    ),
    (
        "markov sample 0 rows",
        lambda: MarkovSource(vocab_size=4).sample(0, 8, np.random.default_rng(0)),
        ValueError,
        "rows: expected",
    ),
    (
        "markov sample seq_len 0",
        lambda: MarkovSource(vocab_size=4).sample(2, 0, np.random.default_rng(0)),
        ValueError,
        "seq_len: expected",
    ),
    (
        "transduction channel 1",
        lambda: TransductionTask(channel=1.0),
        ValueError,
        "channel: expected",
    ),
    (
        "transduction vocab 1",
        lambda: TransductionTask(vocab_size=1),
        ValueError,
        "vocab_size: expected",
    ),
    ("transduction length 0", lambda: TransductionTask(length=0), ValueError, "length: expected"),
    (
        "corrupt unknown kind",
        lambda: corrupt(np.zeros((4, 5), dtype=int), "delete", 0.1, 4, np.random.default_rng(0)),
        ValueError,
        "kind",
    ),
    (
        "corrupt rate 1.5",
        lambda: corrupt(np.zeros((4, 5), dtype=int), "shuffle", 1.5, 4, np.random.default_rng(0)),
        ValueError,
        "rate",
    ),
    (
        "corrupt float seqs",
        lambda: corrupt(np.zeros((4, 5)), "shuffle", 0.1, 4, np.random.default_rng(0)),
        TypeError,
        "seqs: expected an integer",
    ),
    (
        "corrupt 1-D seqs",
        lambda: corrupt(np.zeros(5, dtype=int), "shuffle", 0.1, 4, np.random.default_rng(0)),
        ValueError,
        "seqs: expected shape",
    ),
    (
        "corrupt mask shape",
        lambda: corrupt(
            np.zeros((4, 5), dtype=int),
            "substitute",
            0.1,
            4,
            np.random.default_rng(0),
            np.ones(3, bool),
        ),
        ValueError,
        "positions: expected",
    ),
    (
        "text too short",
        lambda: text_sequences(np.arange(5), 2, 16, np.random.default_rng(0)),
        ValueError,
        "tokens: expected more than",
    ),
    (
        "text 0 rows",
        lambda: text_sequences(np.arange(50), 0, 16, np.random.default_rng(0)),
        ValueError,
        "rows: expected",
    ),
    # grid
    ("cell unknown task", lambda: Cell("imagenet", "substitute", 0.1, 8, 1024), ValueError, "task"),
    (
        "cell unknown corruption",
        lambda: Cell("markov", "delete", 0.1, 8, 1024),
        ValueError,
        "corruption",
    ),
    ("cell too few tokens", lambda: Cell("markov", "substitute", 0.1, 8, 10), ValueError, "tokens"),
    ("cell rate 1", lambda: Cell("markov", "substitute", 1.0, 8, 1024), ValueError, "rate"),
    ("cell d_model 0", lambda: Cell("markov", "substitute", 0.1, 0, 1024), ValueError, "d_model"),
    (
        "cell d_model not a head multiple",
        lambda: Cell("markov", "substitute", 0.1, 50, 1024),
        ValueError,
        "d_model: expected a multiple",
    ),
    (
        "cell lr 0",
        lambda: Cell("markov", "substitute", 0.1, 8, 1024, lr=0.0),
        ValueError,
        "lr: expected",
    ),
    ("rows_to_data empty", lambda: rows_to_data([]), ValueError, "rows: expected at least one"),
    (
        "rows_to_data unknown Q",
        lambda: rows_to_data([{"N": 1, "D": 1, "loss": 1}], q="quality"),
        ValueError,
        "q: expected one of",
    ),
    (
        "rows_to_data missing column",
        lambda: rows_to_data([{"N": 1, "D": 1}]),
        ValueError,
        "rows: row 0 lacks",
    ),
    (
        "run_grid 0 workers",
        lambda: run_grid([], "x.csv", workers=0),
        ValueError,
        "workers: expected",
    ),
    (
        "run_grid not cells",
        lambda: run_grid(["markov"], "x.csv"),
        TypeError,
        "cells: expected Cell",
    ),  # type: ignore[list-item]
]


@pytest.mark.parametrize(
    ("call", "error", "match"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_rejected(
    call: Callable[[], object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error) as info:
        call()
    assert match in str(info.value), str(info.value)


def test_csv_loaders_reject_bad_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="path:"):
        read_runs_csv(tmp_path / "missing.csv")
    with pytest.raises(TypeError, match="path: expected a path"):
        read_runs_csv(3)  # type: ignore[arg-type]
    empty = tmp_path / "empty.csv"
    empty.write_text("N,D,loss\n")
    with pytest.raises(ValueError, match="no rows"):
        read_runs_csv(empty)
    text = tmp_path / "text.csv"
    text.write_text("N,D,loss\n1e6,1e9,abc\n")
    with pytest.raises(ValueError, match="row 2, column 'loss': expected a number, got 'abc'"):
        read_runs_csv(text)
    good = tmp_path / "good.csv"
    good.write_text("N,D,loss\n1e6,1e9,3.0\n")
    with pytest.raises(ValueError, match="column 'Q': not in good.csv"):
        read_runs_csv(good, q_col="Q")
    q_big = tmp_path / "q.csv"
    q_big.write_text("N,D,loss,Q\n1e6,1e9,3.0,1.2\n")
    with pytest.raises(ValueError, match=r"Q: expected values in \(0, 1\]"):
        read_runs_csv(q_big, q_col="Q")
    epoch = tmp_path / "epoch.csv"
    epoch.write_text("Model Size,Training FLOP,loss\n1e6,6e15,3.0\n2e6,1e16,2.9\n")
    with pytest.raises(ValueError, match="drop_highest_loss: expected fewer than the 2 rows"):
        read_epoch_chinchilla(epoch)
    with pytest.raises(ValueError, match="drop_highest_loss: expected a non-negative int"):
        read_epoch_chinchilla(epoch, drop_highest_loss=-1)
    with pytest.raises(ValueError, match="column 'Model Size'"):
        read_epoch_chinchilla(text)
