"""The plots of the reproduce experiment, drawn from `fits.HeadlineFits` into a `Run` folder."""

from __future__ import annotations

import numpy as np

from quality_scaling.experiments.fits import HeadlineFits
from quality_scaling.experiments.protocol import ProtocolFits
from quality_scaling.experiments.scales import Arm
from quality_scaling.grid import rows_to_data
from quality_scaling.laws import ScalingData
from shared_core.report import Run

__all__ = ["plot_all", "plot_protocol"]


def plot_protocol(run: Run, proto: ProtocolFits) -> None:
    """protocol_loss_vs_Q (runs and the Huber fit per D) and protocol_delta_loss (the paper's
    diagnostic: Delta L against Q^-gamma - 1, with the law's lines B D^-beta x)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fit = proto.huber
    p = fit.params
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), dpi=120)
    qq = np.linspace(0.5, 1.0, 60)
    for d in sorted({r["D"] for r in proto.rows}):
        sel = [r for r in proto.rows if r["D"] == d]
        (line,) = axes[0].plot(
            [r["q_proxy"] for r in sel], [r["loss"] for r in sel], "o", ms=3, label=f"D = {d:g}"
        )
        curve = ScalingData(np.full(60, sel[0]["N"]), np.full(60, d), np.ones(60), qq)
        axes[0].plot(qq, fit.predict(curve), "-", color=line.get_color(), alpha=0.7)
        pts = [r for r in proto.points if r["D"] == d]
        x = np.array([r["x"] for r in pts])
        axes[1].plot(
            x, [r["delta_L"] for r in pts], "o", color=line.get_color(), label=f"D = {d:g}"
        )
        xx = np.linspace(0, x.max(), 10)
        axes[1].plot(xx, p["B"] * d ** -p["beta"] * xx, "-", color=line.get_color(), alpha=0.7)
    axes[0].set_xlabel("Q = 1 - eta (fraction of clean samples)")
    axes[0].set_ylabel("clean test loss (nats)")
    axes[0].set_title("runs (points) and the Huber fit E + B / (D^beta Q^gamma)")
    axes[1].axhline(0, color="k", lw=0.5)
    axes[1].set_xlabel(f"Q^-gamma - 1 (gamma = {p['gamma']:.3f})")
    axes[1].set_ylabel("Delta L = L(D, Q) - L(D, 1) (seed means)")
    axes[1].set_title("the paper's diagnostic (lines: B D^-beta (Q^-gamma - 1))")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    run.save_figure("protocol_delta_loss", fig)


def plot_all(run: Run, arm: Arm, fits: HeadlineFits) -> None:
    """loss_vs_D_per_Q, predicted_vs_observed and effective_data_vs_corruption (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, data, full = fits.rows, fits.data, fits.full
    rates = sorted({r["rate"] for r in rows})
    widths = arm.d_models[-2:]
    fig, axes = plt.subplots(1, len(widths), figsize=(5 * len(widths), 4), dpi=120, sharey=True)
    axes = np.atleast_1d(axes)
    for ax, d_model in zip(axes, widths, strict=True):
        for p_ in rates:
            m = np.array([r["rate"] == p_ and r["d_model"] == d_model for r in rows])
            sub = data.subset(np.flatnonzero(m))
            (line,) = ax.plot(sub.D, sub.loss, "o", label=f"p = {p_:g} (Q = {1 - p_:g})")
            dd = np.geomspace(sub.D.min(), sub.D.max() * 4, 50)
            curve = ScalingData(np.full(50, sub.N[0]), dd, np.ones(50), np.full(50, 1 - p_))
            ax.plot(dd, full.predict(curve), "-", color=line.get_color(), alpha=0.7)
        ax.axhline(rows[0]["floor"], color="k", ls=":", label="entropy rate (true E)")
        ax.set_xscale("log")
        ax.set_xlabel("D (training tokens)")
        ax.set_title(f"{arm.name}, d_model = {d_model} (N = {int(sub.N[0])})")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("clean test loss (nats)")
    axes[0].legend(fontsize=7)
    fig.suptitle("loss vs training tokens per quality level (points: runs; lines: quality law)")
    fig.tight_layout()
    run.save_figure("loss_vs_D_per_Q", fig)

    fig, ax = plt.subplots(figsize=(5, 5), dpi=120)
    held = rows_to_data(rows, "q_proxy").subset(fits.test)
    for label in ("chinchilla (Q ignored)", "quality, Q = 1 - p"):
        ax.scatter(held.loss, fits.random_split[label].predict(held), s=14, label=label)
    lo, hi = data.loss.min(), data.loss.max()
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="perfect prediction")
    ax.set_xlabel("observed held-out loss (nats)")
    ax.set_ylabel("predicted loss (nats)")
    ax.set_title("held-out cells (random 25%)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    run.save_figure("predicted_vs_observed", fig)

    p_arr, _fitted, emp, q_def, q_ex = (np.array(x) for x in zip(*fits.deff_curve, strict=True))
    pp = np.linspace(0, max(p_arr), 50)
    g_over_b = full.derived()["gamma_over_beta"]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    ax.plot(
        pp,
        (1 - pp) ** g_over_b,
        "-",
        label=f"fitted D_eff/D = Q^(gamma/beta), gamma/beta = {g_over_b:.2f}",
    )
    ax.plot(pp, 1 - pp, ":", label="Q = 1 - p (linear)")
    ax.plot(p_arr, emp, "o", label="empirical D_eq/D (clean law inverted)")
    ax.plot(p_arr, q_def, "s", label="deficiency Q (count model)")
    ax.plot(p_arr, q_ex, "^", label="exact deficiency Q")
    ax.set_xlabel("corruption rate p (token substitution)")
    ax.set_ylabel("effective data fraction")
    ax.set_title("effective data vs corruption")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    run.save_figure("effective_data_vs_corruption", fig)
