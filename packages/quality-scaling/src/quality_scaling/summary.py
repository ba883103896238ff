"""What `quality-scaling fit` prints and writes: the fitted law in one readable block, gamma
with its interval and the paper's sublinearity verdict, a JSON report and the diagnostic plot
(fitted against observed loss, coloured by quality level).

The verdict follows the paper's criterion: gamma < 1 means effective data decays sub-linearly
with quality (``D_eff = D Q^(gamma/beta)``, models robust to moderate corruption). With a
bootstrap it is decided by the 95 % interval (below 1, above 1, or containing 1); without one
it is the point estimate, and the line says so.
"""

from __future__ import annotations

from os import PathLike
from typing import Any

import numpy as np

from quality_scaling.fit import FitResult
from quality_scaling.laws import ScalingData

__all__ = ["fit_report", "gamma_verdict", "law_formula", "plot_fit", "summary_text"]

MAX_LEVELS = 8
"""At most this many distinct Q values are plotted as levels; more are binned into quintiles."""


def _g(x: float) -> str:
    """Four significant digits, no exponent below 1e5."""
    return f"{x:.4g}"


def law_formula(fit: FitResult) -> str:
    """The fitted law with its constants: ``L(N, D, Q) = 1.8 + 400 / N^0.34 + ...``."""
    p = fit.params
    if fit.law.name == "chinchilla":
        return (
            f"L(N, D) = {_g(p['E'])} + {_g(p['A'])} / N^{_g(p['alpha'])}"
            f" + {_g(p['B'])} / D^{_g(p['beta'])}"
        )
    if fit.law.name == "quality_fixed_n":
        return f"L(D, Q) = {_g(p['E'])} + {_g(p['B'])} / (D^{_g(p['beta'])} Q^{_g(p['gamma'])})"
    return (
        f"L(N, D, Q) = {_g(p['E'])} + {_g(p['A'])} / N^{_g(p['alpha'])}"
        f" + {_g(p['B'])} / (D^{_g(p['beta'])} Q^{_g(p['gamma'])})"
    )


def gamma_verdict(fit: FitResult) -> str:
    """One line: gamma, its interval (with a bootstrap) and the paper's gamma < 1 verdict."""
    if not fit.law.uses_quality:
        raise ValueError(f"fit: the {fit.law.name} law has no gamma (it does not read Q)")
    gamma = fit.params["gamma"]
    if fit.samples.size == 0:
        side = "below" if gamma < 1 else "at or above"
        return (
            f"gamma = {gamma:.3f} ({side} 1 as a point estimate; pass --bootstrap 200 for "
            "an interval and a verdict)"
        )
    lo, hi = fit.ci["gamma"]
    pct = f"{100 * fit.level:g} %"
    if hi < 1:
        verdict = "sublinear: effective data decays sub-linearly with quality, as the paper finds"
    elif lo > 1:
        verdict = "superlinear: quality costs more than the paper's gamma < 1"
    else:
        verdict = "undecided: the interval contains 1"
    return f"gamma = {gamma:.3f} [{lo:.3f}, {hi:.3f}] ({pct}): {verdict}"


def _residual_rmse(fit: FitResult, data: ScalingData) -> float:
    return float(np.sqrt(np.mean((np.log(fit.predict(data)) - data.log_loss) ** 2)))


def summary_text(fit: FitResult, data: ScalingData) -> str:
    """The readable block `fit` prints: rows and loss, the law, each constant with its interval,
    and (for the quality laws) the gamma verdict."""
    kind = "least squares" if fit.delta >= 1 else f"Huber, delta {fit.delta:g}"
    lines = [
        f"{fit.law.name} law fitted to {fit.n_rows} runs ({kind} on log-loss; "
        f"RMSE of log-loss {_residual_rmse(fit, data):.4f})",
        f"  {law_formula(fit)}",
    ]
    ci = fit.ci if fit.samples.size else {}
    for name, value in fit.derived().items():
        interval = f"  [{ci[name][0]:.4g}, {ci[name][1]:.4g}]" if name in ci else ""
        lines.append(f"  {name:<16}{value:>12.4g}{interval}")
    if fit.law.uses_quality:
        lines.append(gamma_verdict(fit))
    return "\n".join(lines)


def fit_report(fit: FitResult, data: ScalingData) -> dict[str, Any]:
    """The JSON `fit --out` writes (and `plan` reads): law, rows, objective, params, ci."""
    out: dict[str, Any] = {
        "law": fit.law.name,
        "rows": fit.n_rows,
        "delta": fit.delta,
        "objective": fit.objective,
        "rmse_log": _residual_rmse(fit, data),
        "formula": law_formula(fit),
        "params": fit.derived(),
    }
    if fit.samples.size:
        out["ci"] = {k: list(v) for k, v in fit.ci.items()}
        out["level"] = fit.level
    if fit.law.uses_quality:
        out["verdict"] = gamma_verdict(fit)
    return out


def _levels(q: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """An integer level per row and its label: the distinct Q values, or Q quintiles."""
    values = np.unique(q)
    if len(values) <= MAX_LEVELS:
        return np.searchsorted(values, q), [f"Q = {v:.3g}" for v in values]
    edges = np.quantile(q, np.linspace(0, 1, 6))
    level = np.clip(np.searchsorted(edges, q, side="right") - 1, 0, 4)
    return level, [f"Q in [{edges[i]:.2f}, {edges[i + 1]:.2f}]" for i in range(5)]


def plot_fit(fit: FitResult, data: ScalingData, path: str | PathLike[str]) -> None:
    """Fitted against observed loss, one colour per quality level, with the y = x line: a
    level whose points bend away from the line is one the law does not describe."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from shared_core.atomic import atomic_path

    pred = fit.predict(data)
    level, labels = _levels(data.Q)
    fig, ax = plt.subplots(figsize=(5.6, 4.6), dpi=120)
    for i, label in enumerate(labels):
        sel = level == i
        if sel.any():
            ax.plot(pred[sel], data.loss[sel], "o", ms=4, alpha=0.8, label=f"{label} ({sel.sum()})")
    lo, hi = float(min(pred.min(), data.loss.min())), float(max(pred.max(), data.loss.max()))
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="fitted = observed")
    ax.set_xlabel("fitted loss (nats)")
    ax.set_ylabel("observed loss (nats)")
    ax.set_title(f"{fit.law.name} law: fitted vs observed, per quality level", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, title="runs", title_fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
