"""The paper's protocol, fitted: one model size, sample-level corruption, Q = 1 - eta.

Paper note ("Loss & Training", "Key Experimental Results", "Key Findings"): with N fixed the law is
``L(D, Q) = E + B / (D^beta Q^gamma)`` (`laws.QUALITY_FIXED_N`; E absorbs A / N^alpha); B, beta,
gamma and E are fitted by least squares and by Huber regression on all runs (3 D x 7 Q x seeds);
the claim is gamma < 1 ("effective data decays sub-linearly with quality"); and
``Delta L(Q) = L(N, D, Q) - L(N, D, 1) ~ B D^-beta (Q^-gamma - 1)`` is a line through the origin
for every D. Our additions: bootstrap intervals, gamma/beta (the exponent of D_eff = D Q^(gamma /
beta) in this form), Q from the deficiency estimators, and the known-floor fix (the noisy Bayes
predictor's clean loss rises with eta: subtracting that known shift before the fit).

Pure functions: grid rows in, fits and table rows out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from quality_scaling.fit import DELTA, FitResult, fit_law
from quality_scaling.grid import rows_to_data
from quality_scaling.laws import QUALITY_FIXED_N, ScalingData

__all__ = [
    "LEAST_SQUARES_DELTA",
    "PROTOCOL_FITS",
    "ProtocolFits",
    "delta_loss",
    "floor_corrected",
    "protocol_fits",
]

Row = dict[str, Any]

LEAST_SQUARES_DELTA = 1.0
"""Huber delta that makes the fit least squares: every log-loss residual near the optimum is far
below 1 (a factor e), where Huber_delta(r) = r^2 / 2."""

PROTOCOL_FITS: dict[str, tuple[str, float, bool]] = {
    "least squares, Q = 1 - eta": ("q_proxy", LEAST_SQUARES_DELTA, False),
    "Huber, Q = 1 - eta": ("q_proxy", DELTA, False),
    "Huber, Q = exp(-Delta) (paper's deficiency, plug-in)": ("q_deficiency", DELTA, False),
    "Huber, Q = exp(-Delta) (exact)": ("q_exact", DELTA, False),
    "Huber, Q = 1 - eta, known floor shift removed (ours)": ("q_proxy", DELTA, True),
}
"""Fit label -> (grid column Q is read from, Huber delta, subtract the known floor shift)."""


def floor_corrected(rows: list[Row]) -> list[Row]:
    """The rows with ``loss - (floor_noisy - floor)``: the clean-test loss minus the rise of the
    noisy Bayes predictor's loss over the entropy rate (`quality.markov_noisy_floor`), i.e. the
    law ``L = E + [F(Q) - H] + B / (D^beta Q^gamma)`` with its Q-dependent floor F(Q) known."""
    bad = [r for r in rows if not np.isfinite(r.get("floor_noisy", float("nan")))]
    if bad:
        raise ValueError(
            f"rows: expected a known noisy floor (Markov source, substitution or samples) in "
            f"every row, got {bad[0].get('key', bad[0])!r}"
        )
    return [{**r, "loss": r["loss"] - (r["floor_noisy"] - r["floor"])} for r in rows]


def _data(rows: list[Row], q: str) -> ScalingData:
    data = rows_to_data(rows, q)
    if np.ptp(data.log_d) == 0:
        raise ValueError(
            f"rows: expected at least two distinct token budgets D (beta is not identifiable "
            f"from one), got D = {data.D[0]:g} in every row"
        )
    if np.ptp(data.log_n) != 0:
        raise ValueError(
            f"rows: expected one model size (the paper's protocol), got N in "
            f"{sorted(set(data.N.tolist()))}"
        )
    return data


def delta_loss(rows: list[Row], gamma: float) -> list[Row]:
    """``Delta L(Q) = mean_seeds L(D, Q) - mean_seeds L(D, 1)`` against ``x = Q^-gamma - 1``,
    one row per (D, Q < 1): the paper's diagnostic."""
    out = []
    for d in sorted({r["D"] for r in rows}):
        at_d = [r for r in rows if r["D"] == d]
        clean = [r["loss"] for r in at_d if r["q_proxy"] == 1.0]
        if not clean:
            raise ValueError(f"rows: expected clean (Q = 1) runs at D = {d:g} for Delta L")
        for q in sorted({r["q_proxy"] for r in at_d if r["q_proxy"] < 1.0}, reverse=True):
            loss = float(np.mean([r["loss"] for r in at_d if r["q_proxy"] == q]))
            out.append(
                {"D": d, "Q": q, "x": q**-gamma - 1.0, "delta_L": loss - float(np.mean(clean))}
            )
    return out


def _diagnostic_lines(points: list[Row], fit: FitResult) -> list[Row]:
    """Per D: the least-squares line of Delta L on x (slope, intercept, R^2), the slope of the line
    forced through the origin, and the law's slope B D^-beta."""
    p = fit.params
    out = []
    for d in sorted({r["D"] for r in points}):
        x = np.array([r["x"] for r in points if r["D"] == d])
        y = np.array([r["delta_L"] for r in points if r["D"] == d])
        slope, intercept = np.polyfit(x, y, 1)
        resid = y - (slope * x + intercept)
        r2 = 1.0 - float(resid @ resid) / float(((y - y.mean()) ** 2).sum())
        out.append(
            {
                "D": d,
                "slope_law_B_D^-beta": p["B"] * d ** -p["beta"],
                "slope_through_origin": float(x @ y / (x @ x)),
                "slope": float(slope),
                "intercept": float(intercept),
                "r2": r2,
                "max_delta_L": float(y.max()),
            }
        )
    return out


@dataclass
class ProtocolFits:
    """The fits of the paper's protocol and the rows of its tables."""

    rows: list[Row]
    fits: dict[str, FitResult]  # label (`PROTOCOL_FITS`) -> fit on all runs, bootstrap CIs
    points: list[Row]  # Delta L against Q^-gamma - 1 (Huber, Q = 1 - eta)
    tables: dict[str, list[Row]] = field(default_factory=dict)

    @property
    def huber(self) -> FitResult:
        return self.fits["Huber, Q = 1 - eta"]


def protocol_fits(
    rows: list[Row], n_bootstrap: int, seed: int = 0, grid: np.ndarray | None = None
) -> ProtocolFits:
    """Every fit of `PROTOCOL_FITS` on all the protocol's runs (bootstrap CIs from
    `n_bootstrap` resamples), the Delta L diagnostic and the tables.

    Raises ValueError for rows with a single D or more than one N (the protocol's shape).
    """
    if not rows:
        raise ValueError("rows: expected the protocol's grid rows, got none")
    rows = sorted(rows, key=lambda r: (r["seed"], r["rate"], r["tokens"]))
    fits: dict[str, FitResult] = {}
    for label, (q, delta, fix) in PROTOCOL_FITS.items():
        if q == "q_exact" and not all(np.isfinite(r["q_exact"]) for r in rows):
            continue
        data = _data(floor_corrected(rows) if fix else rows, q)
        fits[label] = fit_law(
            data, QUALITY_FIXED_N, grid=grid, delta=delta, n_bootstrap=n_bootstrap, seed=seed
        )
    result = ProtocolFits(rows, fits, [])
    result.points = delta_loss(rows, result.huber.params["gamma"])
    params = []
    for label, fit in fits.items():
        d, ci = fit.derived(), fit.ci
        params.append(
            {
                "fit": label,
                **{k: d[k] for k in ("B", "beta", "gamma", "E", "gamma_over_beta")},
                **{f"{k}_lo": ci[k][0] for k in ("beta", "gamma", "gamma_over_beta")},
                **{f"{k}_hi": ci[k][1] for k in ("beta", "gamma", "gamma_over_beta")},
                "gamma_below_1": bool(ci["gamma"][1] < 1.0),
                "objective": fit.objective,
            }
        )
    result.tables = {
        "paper's protocol: fitted B, beta, gamma, E (95% bootstrap CI)": params,
        "paper's protocol: Delta L vs Q^-gamma - 1 per D": _diagnostic_lines(
            result.points, result.huber
        ),
        "paper's protocol: mean clean-test loss per (D, Q)": _loss_table(rows),
    }
    return result


def _loss_table(rows: list[Row]) -> list[Row]:
    out = []
    for d in sorted({r["D"] for r in rows}):
        for q in sorted({r["q_proxy"] for r in rows}, reverse=True):
            sel = [r for r in rows if r["D"] == d and r["q_proxy"] == q]
            loss = np.array([r["loss"] for r in sel])
            out.append(
                {
                    "D": d,
                    "Q": q,
                    "loss_mean": float(loss.mean()),
                    "loss_sd": float(loss.std(ddof=1)) if len(loss) > 1 else float("nan"),
                    "runs": len(sel),
                    "noisy_floor": sel[0]["floor_noisy"],
                    "Q_deficiency": float(np.mean([r["q_deficiency"] for r in sel])),
                    "Q_exact": sel[0]["q_exact"],
                }
            )
    return out
