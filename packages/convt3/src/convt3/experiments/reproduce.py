"""``convt3 reproduce``: forced PDEs (finding 1) and moving digits (finding 2) at one scale."""

from __future__ import annotations

from typing import Any

import numpy as np

from convt3.experiments.common import LABELS, paired_interval
from convt3.experiments.config import ESTIMATE_S, SCALES, Config
from shared_core.cli import ReproduceArgs, UsageError
from shared_core.progress import phase, plan
from shared_core.report import Run

__all__ = ["ESTIMATE_S", "SCALES", "Config", "reproduce"]

TASK_TITLES = {
    "heat": "heat (5-point stencil)",
    "advection_diffusion": "advection-diffusion (9-point + upwind)",
    "pointwise": "pointwise control (1x1 dynamics)",
}


def _strip(
    run: Run, name: str, rows: dict[str, np.ndarray], columns: list[int], title: str
) -> None:
    """A grid of frames: one row per model (and the truth), one column per horizon."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(rows), len(columns), figsize=(1.3 * len(columns) + 1.6, 1.3 * len(rows) + 0.6), dpi=120,
        squeeze=False,
    )  # fmt: skip
    lo = min(float(r.min()) for r in rows.values())
    hi = max(float(r.max()) for r in rows.values())
    for i, (label, frames) in enumerate(rows.items()):
        for j, h in enumerate(columns):
            ax = axes[i, j]
            ax.imshow(frames[h - 1], vmin=lo, vmax=hi, cmap="viridis")
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_title(f"t+{h}", fontsize=8)
            if j == 0:
                ax.set_ylabel(label, fontsize=7, rotation=0, ha="right", va="center")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    run.save_figure(name, fig)


def _paired_rows(run: Run, kind: str, c: Config, per_seed: list[dict[str, dict[str, Any]]]) -> None:
    """Per-seed paired differences (arm - baseline): extrapolation horizon and log10 relative
    MSE at the horizons beyond the training length; mean and 95% Student-t interval."""
    fmt = "{:+.2f} [{:+.2f}, {:+.2f}]"
    for arm, base in c.pairs:
        if arm not in c.models or base not in c.models:
            continue
        row: dict[str, Any] = {"task": kind, "arm - baseline": f"{LABELS[arm]} - {LABELS[base]}"}
        a, b = ([float(ps[m]["valid_horizon"]) for ps in per_seed] for m in (arm, base))
        row[f"d steps below {c.valid_threshold:g}"] = fmt.format(*paired_interval(a, b))
        for h in c.horizons:
            if h > c.train_len:
                la, lb = (
                    [float(np.log10(ps[m]["horizon"][h])) for ps in per_seed] for m in (arm, base)
                )
                row[f"d log10 relMSE@{h}"] = fmt.format(*paired_interval(la, lb))
        run.add_row(f"paired differences over {len(c.seeds)} seed(s), mean [95% t-interval]", **row)


def reproduce(args: ReproduceArgs) -> int:
    """Run both findings, print the tables, write runs/convt3/<timestamp>/."""
    import torch

    from convt3.experiments.digits import run_digits
    from convt3.experiments.physics import run_task

    c: Config = args.config
    if args.device not in ("auto", "cpu"):
        raise UsageError(f"--device: this reproduction runs on the CPU, got {args.device!r}")
    tasks = [f"forced PDE {kind}" for kind in c.tasks]
    plan(tasks + ["moving digits"] * c.digits + ["report"], ESTIMATE_S.get(args.scale))
    torch.manual_seed(args.seed)
    run = Run("convt3", c, out=args.out)
    summary: dict[str, Any] = {}
    for kind in c.tasks:
        phase(f"forced PDE {kind}")
        per_seed = [run_task(kind, c, c.models, args.seed + s) for s in c.seeds]
        res = per_seed[0]
        series = {}
        for name, r in res.items():
            runs = [ps[name] for ps in per_seed]
            row: dict[str, Any] = {"task": kind, "model": LABELS[name], "params": r["params"]}
            for h in r["horizon"]:  # type: ignore[attr-defined]
                row[f"relMSE@{h}"] = float(np.mean([x["horizon"][h] for x in runs]))  # type: ignore[index]
            valid = [int(x["valid_horizon"]) for x in runs]  # type: ignore[call-overload]
            row[f"steps below {c.valid_threshold:g}"] = "/".join(map(str, valid))
            row["train loss"] = float(np.mean([x["final_loss"] for x in runs]))  # type: ignore[misc]
            run.add_row(f"forced PDEs: open-loop relative MSE per horizon, mean of {len(c.seeds)} "
                        f"seed(s) (train length {c.train_len})", **row)  # fmt: skip
            errs = np.mean([np.asarray(x["errors"]) for x in runs], 0)
            series[LABELS[name]] = (list(range(1, len(errs) + 1)), errs.tolist())
            summary[f"{kind}/{name}"] = {
                "horizon": [x["horizon"] for x in runs], "valid_horizon": valid,
                "final_loss": [x["final_loss"] for x in runs],
            }  # fmt: skip
        _paired_rows(run, kind, c, per_seed)
        run.plot(
            f"error_vs_horizon_{kind}", series, xlabel="horizon (steps after the initial field)",
            ylabel="MSE / field variance", logy=True,
            title=f"{TASK_TITLES[kind]}: open-loop error (trained on {c.train_len} steps)",
        )  # fmt: skip
        truth = res[c.models[0]]["example"][0]  # type: ignore[index]
        rows = {"truth": truth} | {LABELS[n]: r["example"][1] for n, r in res.items()}  # type: ignore[index]
        _strip(
            run, f"frames_{kind}", rows, list(c.horizons), f"{TASK_TITLES[kind]}: one test field"
        )
    if c.digits:
        phase("moving digits")
        res = run_digits(c, args.seed)
        truth = res.pop("_truth")
        series = {}
        for name, r in res.items():
            row = {"model": LABELS[name], "params": r["params"]}
            for h, v in r["mse"].items():  # type: ignore[attr-defined]
                row[f"MSE@{h}"] = v
            for h, v in r["ssim"].items():  # type: ignore[attr-defined]
                row[f"SSIM@{h}"] = v
            run.add_row(
                f"moving digits: {c.context} frames in, {c.future} out (closed loop)", **row
            )
            curve = np.asarray(r["mse_curve"])
            series[LABELS[name]] = (list(range(1, len(curve) + 1)), curve.tolist())
            summary[f"digits/{name}"] = {"mse": r["mse"], "ssim": r["ssim"]}
        run.plot(
            "digits_mse_vs_horizon", series, xlabel="frames after the context",
            ylabel="frame MSE (pixels in [0, 1])", title="moving digits: closed-loop frame error",
        )  # fmt: skip
        cols = [h for h in (1, 2, 5, 10, 15, 20, 40) if h <= c.future]
        strip: dict[str, np.ndarray] = {"truth": np.asarray(truth["frames"])}
        strip |= {LABELS[n]: np.asarray(r["frames"]) for n, r in res.items()}
        _strip(run, "digits_frames", strip, cols, "moving digits: predicted frames (test digits)")
    phase("report")
    run.log(results=summary)
    run.finish(
        title="convt3 reproduce: ConvT3 vs ConvS5 vs ConvLSTM",
        notes=(
            "Forced PDEs: the model gets the initial field once and the forcing at every step "
            "and must carry the field in its state (open loop). Relative MSE = MSE / variance "
            "of the true field. Moving digits: closed-loop rollouts from the context frames."
        ),
    )
    return 0
