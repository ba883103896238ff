"""The fits of the reproduce experiment: grid rows in, table rows and fitted laws out.

Every function here is pure (no files, no plots): `headline_fits` fits both laws on the first
extension arm, i.i.d. substitution across model sizes (random and unseen-Q held-out splits,
bootstrap CIs on all cells with and without the known floor shift, effective data, planning;
the headline of versions before 0.3.0, whose headline is now `protocol`), `secondary_fits` the
random split of every other arm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from quality_scaling import plan
from quality_scaling.experiments.protocol import floor_corrected
from quality_scaling.experiments.scales import Arm, Scale, start_grid
from quality_scaling.fit import FitResult, fit_law, holdout_error
from quality_scaling.grid import rows_to_data
from quality_scaling.laws import CHINCHILLA, QUALITY, ScalingData

__all__ = [
    "ESTIMATORS",
    "HeadlineFits",
    "equivalent_data",
    "fit_and_score",
    "headline_fits",
    "secondary_fits",
    "split",
]

Row = dict[str, Any]

ESTIMATORS: dict[str, str | None] = {
    "chinchilla (Q ignored)": None,
    "quality, Q = 1 - p": "q_proxy",
    "quality, Q = deficiency": "q_deficiency",
    "quality, Q = deficiency ratio (ours)": "q_deficiency_ratio",
    "quality, Q = exact deficiency": "q_exact",
}
"""Law label -> the grid column Q is read from (None: the Chinchilla law, Q ignored). "deficiency"
is the paper's Q = exp(-Delta) (`quality.deficiency_q`); the ratio is ours."""


def split(n: int, frac: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A random ``(train, test)`` split of ``range(n)`` holding out ``round(frac n)`` (>= 1) rows."""
    perm = np.random.default_rng(seed).permutation(n)
    k = max(1, round(frac * n))
    return np.sort(perm[k:]), np.sort(perm[:k])


def fit_and_score(
    rows: list[Row], train: np.ndarray, test: np.ndarray, q: str | None, grid: str
) -> tuple[FitResult, dict[str, float]]:
    """Fit on the `train` rows (Chinchilla if `q` is None, else the quality law with Q = `q`)
    from start grid `grid`; return the fit and its error on the `test` rows."""
    law = CHINCHILLA if q is None else QUALITY
    data = rows_to_data(rows, q or "q_proxy")
    fit = fit_law(data.subset(train), law, grid=start_grid(grid, law))
    return fit, holdout_error(fit, data.subset(test))


def equivalent_data(clean: FitResult, N: np.ndarray, L: np.ndarray) -> np.ndarray:
    """Clean tokens D_eq with L_clean(N, D_eq) = L: the empirical D_eff of a noisy run (NaN
    where the clean law never reaches L)."""
    p = clean.params
    room = L - p["E"] - p["A"] / N ** p["alpha"]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(room > 0, (p["B"] / room) ** (1 / p["beta"]), np.nan)


def _error_row(
    arm: str, split_name: str, law: str, err: dict[str, float], n_tr: int, n_te: int
) -> Row:
    return {
        "arm": arm,
        "split": split_name,
        "law": law,
        "rmse_log": err["rmse_log"],
        "mape": err["mape"],
        "n_train": n_tr,
        "n_test": n_te,
    }


def sorted_rows(rows: list[Row]) -> list[Row]:
    """Grid rows in a fixed order (rate, width, tokens), whatever order the workers wrote them."""
    return sorted(rows, key=lambda r: (r["rate"], r["d_model"], r["tokens"]))


@dataclass
class HeadlineFits:
    """Everything the substitution arm's tables and plots need."""

    rows: list[Row]  # the arm's grid rows, sorted
    data: ScalingData  # all rows, Q = 1 - p
    train: np.ndarray  # the random split
    test: np.ndarray
    random_split: dict[str, FitResult]  # law label -> fit on `train`
    full: FitResult  # quality law, all cells, bootstrap CIs
    floor_fixed: FitResult  # the same on losses minus the known floor shift F(Q) - H
    chinchilla_full: FitResult  # Chinchilla, all cells, bootstrap CIs
    deff_curve: list[
        tuple[float, float, float, float, float]
    ]  # (p, fitted, empirical, q_def, q_ex)
    tables: dict[str, list[Row]] = field(default_factory=dict)


def headline_fits(arm: Arm, rows: list[Row], scale: Scale, seed: int) -> HeadlineFits:
    """Both laws on the substitution arm: held-out errors, CIs (also with the known floor shift
    removed), effective data and planning."""
    rows = sorted_rows(rows)
    tables: dict[str, list[Row]] = {"held-out error": []}
    train, test = split(len(rows), scale.held_out_frac, seed)
    random_split: dict[str, FitResult] = {}
    for label, q in ESTIMATORS.items():
        fit, err = fit_and_score(rows, train, test, q, scale.headline_grid)
        random_split[label] = fit
        tables["held-out error"].append(
            _error_row(arm.name, "random 25% of cells", label, err, len(train), len(test))
        )
    unseen = np.array([r["rate"] == scale.unseen_rate for r in rows])
    for label in ("chinchilla (Q ignored)", "quality, Q = 1 - p", "quality, Q = deficiency"):
        _, err = fit_and_score(
            rows,
            np.flatnonzero(~unseen),
            np.flatnonzero(unseen),
            ESTIMATORS[label],
            scale.secondary_grid,
        )
        tables["held-out error"].append(
            _error_row(
                arm.name,
                f"unseen Q (p = {scale.unseen_rate})",
                label,
                err,
                int((~unseen).sum()),
                int(unseen.sum()),
            )
        )

    data = rows_to_data(rows, "q_proxy")
    grid_q, grid_c = (
        start_grid(scale.headline_grid, QUALITY),
        start_grid(scale.headline_grid, CHINCHILLA),
    )
    full = fit_law(data, QUALITY, grid=grid_q, n_bootstrap=scale.n_bootstrap, seed=seed)
    fixed = fit_law(
        rows_to_data(floor_corrected(rows), "q_proxy"),
        QUALITY,
        grid=grid_q,
        n_bootstrap=scale.n_bootstrap,
        seed=seed,
    )
    chin = fit_law(
        rows_to_data(rows), CHINCHILLA, grid=grid_c, n_bootstrap=scale.n_bootstrap, seed=seed
    )
    ci, chin_ci, fixed_ci = full.ci, chin.ci, fixed.ci
    nan2 = (float("nan"), float("nan"))
    tables["fitted parameters (markov/substitute, all cells, 95% bootstrap CI)"] = [
        {
            "param": name,
            "quality": value,
            "quality_lo": ci[name][0],
            "quality_hi": ci[name][1],
            "quality_floor_fixed": fixed.derived()[name],
            "floor_fixed_lo": fixed_ci[name][0],
            "floor_fixed_hi": fixed_ci[name][1],
            "chinchilla": chin.params.get(name, float("nan")),
            "chinchilla_lo": chin_ci.get(name, nan2)[0],
            "chinchilla_hi": chin_ci.get(name, nan2)[1],
        }
        for name, value in full.derived().items()
    ]

    clean_idx = np.flatnonzero(data.Q == 1.0)
    clean_fit = fit_law(
        rows_to_data(rows).subset(clean_idx),
        CHINCHILLA,
        grid=start_grid(scale.secondary_grid, CHINCHILLA),
    )
    d_eq = equivalent_data(clean_fit, data.N, data.loss) / data.D
    g_over_b = full.derived()["gamma_over_beta"]
    deff_curve = []
    deff_rows = []
    for p_ in sorted({r["rate"] for r in rows}):
        m = np.array([r["rate"] == p_ for r in rows])
        q_def, q_ex = _mean(rows, m, "q_deficiency"), _mean(rows, m, "q_exact")
        emp = float(np.nanmedian(d_eq[m])) if np.any(np.isfinite(d_eq[m])) else float("nan")
        fitted = (1 - p_) ** g_over_b
        deff_curve.append((p_, fitted, emp, q_def, q_ex))
        deff_rows.append(
            {
                "rate": p_,
                "Q_proxy": 1 - p_,
                "fitted_Deff_over_D": fitted,
                "floor_fixed_Deff_over_D": (1 - p_) ** fixed.derived()["gamma_over_beta"],
                "empirical_Deq_over_D": emp,
                "Q_deficiency": q_def,
                "Q_exact": q_ex,
                "Q_deficiency_ratio": _mean(rows, m, "q_deficiency_ratio"),
                "Q_exact_ratio": _mean(rows, m, "q_exact_ratio"),
            }
        )
    tables["effective data vs corruption (markov/substitute)"] = deff_rows

    c_ref = 6 * float(np.median(data.N)) * float(np.median(data.D))
    plan_rows = []
    for q_ in (1.0, 0.9, 0.7):
        opt = plan.compute_optimal(full.params, c_ref, q_)
        plan_rows.append(
            {
                "Q": q_,
                "C": c_ref,
                "N_opt": opt["N"],
                "D_opt": opt["D"],
                "loss": opt["loss"],
                "compute_to_match_Q1": plan.compute_equivalent(full.params, c_ref, 1.0, q_),
            }
        )
    tables["compute-optimal allocation at C = 6 N_med D_med"] = plan_rows
    return HeadlineFits(
        rows, data, train, test, random_split, full, fixed, chin, deff_curve, tables
    )


def _mean(rows: list[Row], mask: np.ndarray, column: str) -> float:
    return float(np.mean([r[column] for r, k in zip(rows, mask, strict=True) if k]))


def secondary_fits(arm: Arm, rows: list[Row], scale: Scale, seed: int) -> dict[str, list[Row]]:
    """The random held-out split of a secondary arm, for Chinchilla and both Q estimators."""
    rows = sorted_rows(rows)
    tr, te = split(len(rows), scale.held_out_frac, seed)
    errors, params = [], []
    for label in ("chinchilla (Q ignored)", "quality, Q = 1 - p", "quality, Q = deficiency"):
        q = ESTIMATORS[label]
        fit, err = fit_and_score(rows, tr, te, q, scale.secondary_grid)
        errors.append(_error_row(arm.name, "random 25% of cells", label, err, len(tr), len(te)))
        if q == "q_proxy":
            params.append({"arm": arm.name, **fit.derived()})
    return {
        "held-out error": errors,
        "secondary fits (quality law, Q = 1 - p, train cells)": params,
    }
