"""The paper's headline: loss scales predictably with Q, the quality-aware law predicts unseen
(N, D, Q) cells better than Chinchilla with Q ignored, and effective data decays with quality.

Runs the noise-injection grid (resumable, cached under ``<out>/quality-scaling/cache/``), fits
both laws per arm, and writes tables and plots through `shared_core.report.Run`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from quality_scaling import plan
from quality_scaling.fit import FitResult, fit_law, holdout_error, init_grid
from quality_scaling.grid import Cell, make_cells, rows_to_data, run_grid
from quality_scaling.laws import CHINCHILLA, QUALITY
from shared_core.cli import ReproduceArgs
from shared_core.device import seed_everything
from shared_core.report import Run

__all__ = ["SCALES", "Arm", "Scale", "reproduce"]


@dataclass(frozen=True)
class Arm:
    """One block of the grid: a task and a corruption over rates x widths x token budgets."""

    task: str
    corruption: str
    rates: tuple[float, ...]
    d_models: tuple[int, ...]
    tokens: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.task}/{self.corruption}"

    def cells(self, seed: int) -> list[Cell]:
        return make_cells(self.task, self.corruption, self.rates, self.d_models, self.tokens, seed)


@dataclass(frozen=True)
class Scale:
    arms: tuple[Arm, ...]
    workers: int = 2
    n_bootstrap: int = 200
    full_grid_secondary: bool = False
    """Full Epoch grid for every fit; else only for the headline random-split and CI fits
    (the others start from a 3-per-axis sub-grid, 243 / 729 starts)."""
    held_out_frac: float = 0.25
    unseen_rate: float = 0.2
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


_SUB = (0.0, 0.1, 0.2, 0.3)
SCALES = {
    "tiny": Scale(
        arms=(
            Arm("markov", "substitute", _SUB, (4, 8, 16, 32), (8192, 16384, 32768, 65536)),
            Arm("markov", "shuffle", (0.0, 0.25, 0.5), (4, 8, 16), (8192, 16384, 32768)),
            Arm("markov", "duplicate", (0.0, 0.25, 0.5), (4, 8, 16), (8192, 16384, 32768)),
            Arm("shakespeare", "substitute", (0.0, 0.15, 0.3), (8, 16, 32), (8192, 16384, 32768)),
            Arm("seq2seq", "substitute", (0.0, 0.15, 0.3), (8, 16, 32), (8192, 16384, 32768)),
        ),
        notes="2 CPU cores, a few minutes",
    ),
    "small": Scale(
        arms=(
            Arm(
                "markov",
                "substitute",
                _SUB,
                (8, 16, 32, 64, 128),
                tuple(2**k for k in range(14, 20)),
            ),
            Arm(
                "markov",
                "shuffle",
                (0.0, 0.2, 0.4, 0.6),
                (8, 16, 32, 64),
                tuple(2**k for k in range(14, 19)),
            ),
            Arm(
                "markov",
                "duplicate",
                (0.0, 0.2, 0.4, 0.6),
                (8, 16, 32, 64),
                tuple(2**k for k in range(14, 19)),
            ),
            Arm(
                "shakespeare",
                "substitute",
                _SUB,
                (16, 32, 64, 128),
                tuple(2**k for k in range(14, 20)),
            ),
            Arm(
                "seq2seq", "substitute", _SUB, (16, 32, 64, 128), tuple(2**k for k in range(14, 20))
            ),
        ),
        workers=8,
        n_bootstrap=1000,
        full_grid_secondary=True,
        notes="one GPU or 8+ CPU cores, about an hour",
    ),
    "paper": Scale(
        arms=(
            Arm(
                "markov",
                "substitute",
                (0.0, 0.05, 0.1, 0.2, 0.3, 0.4),
                (16, 32, 64, 128, 256),
                tuple(2**k for k in range(15, 23)),
            ),
            Arm(
                "markov",
                "shuffle",
                (0.0, 0.1, 0.2, 0.4, 0.6),
                (16, 32, 64, 128),
                tuple(2**k for k in range(15, 22)),
            ),
            Arm(
                "markov",
                "duplicate",
                (0.0, 0.1, 0.2, 0.4, 0.6),
                (16, 32, 64, 128),
                tuple(2**k for k in range(15, 22)),
            ),
            Arm(
                "shakespeare",
                "substitute",
                (0.0, 0.05, 0.1, 0.2, 0.3, 0.4),
                (32, 64, 128, 256),
                tuple(2**k for k in range(15, 23)),
            ),
            Arm(
                "seq2seq",
                "substitute",
                (0.0, 0.05, 0.1, 0.2, 0.3, 0.4),
                (32, 64, 128, 256),
                tuple(2**k for k in range(15, 23)),
            ),
        ),
        workers=16,
        n_bootstrap=4000,
        full_grid_secondary=True,
        notes="GPUs; hours",
    ),
}


def _sub_grid(law: Any) -> np.ndarray:
    return init_grid(
        law,
        a=(0, 10, 20),
        b=(0, 10, 20),
        e=(-1, 0, 1),
        alpha=(0, 1, 2),
        beta=(0, 1, 2),
        gamma=(0, 1, 2),
    )


def _split(n: int, frac: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    perm = np.random.default_rng(seed).permutation(n)
    k = max(1, round(frac * n))
    return np.sort(perm[k:]), np.sort(perm[:k])


def _fit_and_score(
    rows: list[dict], train: np.ndarray, test: np.ndarray, q: str | None, grid: Any
) -> tuple[FitResult, dict[str, float], Any]:
    law = CHINCHILLA if q is None else QUALITY
    data = rows_to_data(rows, q or "q_proxy")
    g = None if grid is None else grid(law)
    fit = fit_law(data.subset(train), law, grid=g)
    return fit, holdout_error(fit, data.subset(test)), data


def _equivalent_data(clean: FitResult, N: np.ndarray, D: np.ndarray, L: np.ndarray) -> np.ndarray:
    """Clean tokens D_eq with L_clean(N, D_eq) = L: the empirical D_eff of a noisy run."""
    p = clean.params
    room = L - p["E"] - p["A"] / N ** p["alpha"]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(room > 0, (p["B"] / room) ** (1 / p["beta"]), np.nan)


def reproduce(args: ReproduceArgs) -> int:
    """`quality-scaling reproduce`: the grid, the fits, the tables and the plots."""
    if args.scale not in SCALES:
        raise ValueError(f"scale: expected one of {sorted(SCALES)}, got {args.scale!r}")
    if args.device not in ("auto", "cpu"):
        print(
            f"note: the tiny models of the grid run on the CPU workers; --device {args.device} is ignored"
        )
    scale = SCALES[args.scale]
    seed_everything(args.seed)
    t0 = time.time()
    run = Run(
        "quality-scaling",
        {"scale": args.scale, "seed": args.seed, "arms": [a.__dict__ for a in scale.arms]},
        out=args.out,
    )
    cache = Path(args.out) / "quality-scaling" / "cache" / f"grid_{args.scale}_seed{args.seed}.csv"
    cells = [c for arm in scale.arms for c in arm.cells(args.seed)]
    print(f"grid: {len(cells)} cells -> {cache} (finished cells are skipped)")
    all_rows = run_grid(cells, cache, workers=scale.workers)
    t_grid = time.time() - t0
    by_arm = {
        arm.name: [r for r in all_rows if f"{r['task']}/{r['corruption']}" == arm.name]
        for arm in scale.arms
    }

    # ---- headline arm: Markov source, token substitution
    head = scale.arms[0]
    rows = sorted(by_arm[head.name], key=lambda r: (r["rate"], r["d_model"], r["tokens"]))
    n = len(rows)
    train, test = _split(n, scale.held_out_frac, args.seed)
    results: dict[str, tuple[FitResult, dict[str, float]]] = {}
    estimators = {
        "chinchilla (Q ignored)": None,
        "quality, Q = 1 - p": "q_proxy",
        "quality, Q = deficiency": "q_deficiency",
        "quality, Q = exact deficiency": "q_exact",
    }
    for label, q in estimators.items():
        fit, err, _ = _fit_and_score(rows, train, test, q, None)
        results[label] = (fit, err)
        run.add_row(
            "held-out error",
            arm=head.name,
            split="random 25% of cells",
            law=label,
            rmse_log=err["rmse_log"],
            mape=err["mape"],
            n_train=len(train),
            n_test=len(test),
        )
    grid = None if scale.full_grid_secondary else _sub_grid
    unseen = np.array([r["rate"] == scale.unseen_rate for r in rows])
    for label in ("chinchilla (Q ignored)", "quality, Q = 1 - p", "quality, Q = deficiency"):
        _, err, _ = _fit_and_score(
            rows, np.flatnonzero(~unseen), np.flatnonzero(unseen), estimators[label], grid
        )
        run.add_row(
            "held-out error",
            arm=head.name,
            split=f"unseen Q (p = {scale.unseen_rate})",
            law=label,
            rmse_log=err["rmse_log"],
            mape=err["mape"],
            n_train=int((~unseen).sum()),
            n_test=int(unseen.sum()),
        )

    # ---- secondary arms
    for arm in scale.arms[1:]:
        arows = sorted(by_arm[arm.name], key=lambda r: (r["rate"], r["d_model"], r["tokens"]))
        tr, te = _split(len(arows), scale.held_out_frac, args.seed)
        for label, q in (
            ("chinchilla (Q ignored)", None),
            ("quality, Q = 1 - p", "q_proxy"),
            ("quality, Q = deficiency", "q_deficiency"),
        ):
            fit, err, _ = _fit_and_score(arows, tr, te, q, grid)
            row = {
                "arm": arm.name,
                "split": "random 25% of cells",
                "law": label,
                "rmse_log": err["rmse_log"],
                "mape": err["mape"],
                "n_train": len(tr),
                "n_test": len(te),
            }
            run.add_row("held-out error", **row)
            if q == "q_proxy":
                run.add_row(
                    "secondary fits (quality law, Q = 1 - p, train cells)",
                    arm=arm.name,
                    **{k: v for k, v in fit.derived().items()},
                )

    # ---- parameters with CIs on all headline cells
    data_all = rows_to_data(rows, "q_proxy")
    full = fit_law(data_all, QUALITY, n_bootstrap=scale.n_bootstrap, seed=args.seed)
    ci = full.ci
    chin_full = fit_law(
        rows_to_data(rows), CHINCHILLA, n_bootstrap=scale.n_bootstrap, seed=args.seed
    )
    for name, value in full.derived().items():
        lo, hi = ci[name]
        cv = chin_full.params.get(name, float("nan"))
        cl, ch = chin_full.ci.get(name, (float("nan"), float("nan")))
        run.add_row(
            "fitted parameters (markov/substitute, all cells, 95% bootstrap CI)",
            param=name,
            quality=value,
            quality_lo=lo,
            quality_hi=hi,
            chinchilla=cv,
            chinchilla_lo=cl,
            chinchilla_hi=ch,
        )

    # ---- D_eff vs corruption
    clean_idx = np.flatnonzero(data_all.Q == 1.0)
    clean_fit = fit_law(
        rows_to_data(rows).subset(clean_idx),
        CHINCHILLA,
        grid=None if grid is None else grid(CHINCHILLA),
    )
    d_eq = _equivalent_data(clean_fit, data_all.N, data_all.D, data_all.loss) / data_all.D
    g_over_b = full.derived()["gamma_over_beta"]
    rates = sorted({r["rate"] for r in rows})
    deff_curve = []
    for p_ in rates:
        m = np.array([r["rate"] == p_ for r in rows])
        q_def = float(np.mean([r["q_deficiency"] for r, k in zip(rows, m, strict=True) if k]))
        q_ex = float(np.mean([r["q_exact"] for r, k in zip(rows, m, strict=True) if k]))
        emp = float(np.nanmedian(d_eq[m])) if np.any(np.isfinite(d_eq[m])) else float("nan")
        fitted = (1 - p_) ** g_over_b
        deff_curve.append((p_, fitted, emp, q_def, q_ex))
        run.add_row(
            "effective data vs corruption (markov/substitute)",
            rate=p_,
            Q_proxy=1 - p_,
            fitted_Deff_over_D=fitted,
            empirical_Deq_over_D=emp,
            Q_deficiency=q_def,
            Q_exact=q_ex,
        )

    # ---- planning with the fitted law
    params = full.params
    c_ref = 6 * float(np.median(data_all.N)) * float(np.median(data_all.D))
    for q_ in (1.0, 0.9, 0.7):
        opt = plan.compute_optimal(params, c_ref, q_)
        run.add_row(
            "compute-optimal allocation at C = 6 N_med D_med",
            Q=q_,
            C=c_ref,
            N_opt=opt["N"],
            D_opt=opt["D"],
            loss=opt["loss"],
            compute_to_match_Q1=plan.compute_equivalent(params, c_ref, 1.0, q_),
        )

    _plots(run, rows, data_all, full, results, train, test, deff_curve, head)

    quality_err = results["quality, Q = 1 - p"][1]["rmse_log"]
    chin_err = results["chinchilla (Q ignored)"][1]["rmse_log"]
    run.log(
        cells=len(all_rows),
        grid_seconds=t_grid,
        total_seconds=time.time() - t0,
        gamma=full.params["gamma"],
        gamma_over_beta=g_over_b,
        heldout_rmse_log_quality=quality_err,
        heldout_rmse_log_chinchilla=chin_err,
        quality_beats_chinchilla=bool(quality_err < chin_err),
        irreducible_loss_known=rows[0]["floor"],
        E_fitted=full.params["E"],
    )
    run.finish(
        title="quality-scaling reproduce: L(N, D, Q) = E + A/N^alpha + B/(D^beta Q^gamma)",
        notes=(
            f"Scale `{args.scale}` ({scale.notes}); {len(all_rows)} training runs. Held-out error: RMSE of "
            "log-loss and mean |relative error| on cells not used in the fit. Chinchilla ignores Q; "
            "the quality-aware law reads Q from the named estimator."
        ),
    )
    return 0


def _plots(
    run: Run,
    rows: list[dict],
    data: Any,
    full: FitResult,
    results: dict,
    train: np.ndarray,
    test: np.ndarray,
    deff_curve: list,
    head: Arm,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=120, sharey=True)
    for ax, d_model in zip(axes, head.d_models[-2:], strict=False):
        for p_ in sorted({r["rate"] for r in rows}):
            m = np.array([r["rate"] == p_ and r["d_model"] == d_model for r in rows])
            sub = data.subset(np.flatnonzero(m))
            (line,) = ax.plot(sub.D, sub.loss, "o", label=f"p = {p_:g} (Q = {1 - p_:g})")
            dd = np.geomspace(sub.D.min(), sub.D.max() * 4, 50)
            from quality_scaling.laws import ScalingData

            grid = ScalingData(np.full(50, sub.N[0]), dd, np.ones(50), np.full(50, 1 - p_))
            ax.plot(dd, full.predict(grid), "-", color=line.get_color(), alpha=0.7)
        ax.axhline(rows[0]["floor"], color="k", ls=":", label="entropy rate (true E)")
        ax.set_xscale("log")
        ax.set_xlabel("D (training tokens)")
        ax.set_title(f"{head.name}, d_model = {d_model} (N = {int(sub.N[0])})")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("clean test loss (nats)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    run.save_figure("loss_vs_D_per_Q", fig)

    fig, ax = plt.subplots(figsize=(5, 5), dpi=120)
    for label in ("chinchilla (Q ignored)", "quality, Q = 1 - p"):
        fit = results[label][0]
        q = "q_proxy"
        d = rows_to_data(rows, q).subset(test)
        ax.scatter(d.loss, fit.predict(d), s=14, label=label)
    lo, hi = data.loss.min(), data.loss.max()
    ax.plot([lo, hi], [lo, hi], "k--", lw=1)
    ax.set_xlabel("observed held-out loss")
    ax.set_ylabel("predicted loss")
    ax.set_title("held-out cells (random 25%)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    run.save_figure("predicted_vs_observed", fig)

    p_, _fitted, emp, q_def, q_ex = (np.array(x) for x in zip(*deff_curve, strict=True))
    pp = np.linspace(0, max(p_), 50)
    g_over_b = full.derived()["gamma_over_beta"]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    ax.plot(
        pp,
        (1 - pp) ** g_over_b,
        "-",
        label=f"fitted D_eff/D = Q^(gamma/beta), gamma/beta = {g_over_b:.2f}",
    )
    ax.plot(pp, 1 - pp, ":", label="Q = 1 - p (linear)")
    ax.plot(p_, emp, "o", label="empirical D_eq/D (clean law inverted)")
    ax.plot(p_, q_def, "s", label="deficiency Q (count model)")
    ax.plot(p_, q_ex, "^", label="exact deficiency Q")
    ax.set_xlabel("corruption rate p (token substitution)")
    ax.set_ylabel("effective data fraction")
    ax.set_title("effective data vs corruption")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    run.save_figure("effective_data_vs_corruption", fig)
    if not math.isfinite(g_over_b):
        print("note: gamma/beta is not finite; the effective-data curve is undefined")
