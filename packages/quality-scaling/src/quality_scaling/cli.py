"""The console script: ``quality-scaling reproduce | fit | plan``."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from quality_scaling import __version__, plan
from quality_scaling.experiments.headline import reproduce
from quality_scaling.fit import fit_law
from quality_scaling.laws import LAWS, ScalingData
from shared_core.cli import Command, make_main, reproduce_command


def _read_csv(path: Path, n_col: str, d_col: str, loss_col: str, q_col: str | None) -> ScalingData:
    if not path.exists():
        raise FileNotFoundError(f"csv: {path} does not exist")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"csv: {path} has no rows")
    for c in (n_col, d_col, loss_col, *([q_col] if q_col else [])):
        if c not in rows[0]:
            raise ValueError(f"csv: column {c!r} not in {sorted(rows[0])}")

    def col(c: str) -> list[float]:
        return [float(r[c]) for r in rows]

    return ScalingData(col(n_col), col(d_col), col(loss_col), col(q_col) if q_col else None)


def _fit(ns: argparse.Namespace) -> int:
    data = _read_csv(
        ns.csv, ns.n_col, ns.d_col, ns.loss_col, ns.q_col if ns.law == "quality" else None
    )
    fit = fit_law(data, ns.law, n_bootstrap=ns.bootstrap, seed=ns.seed)
    out = {"law": ns.law, "rows": len(data), "objective": fit.objective, "params": fit.derived()}
    if ns.bootstrap:
        out["ci95"] = fit.ci
    print(json.dumps(out, indent=2))
    return 0


def _configure_fit(p: argparse.ArgumentParser) -> None:
    p.add_argument("csv", type=Path, help="CSV with one row per training run")
    p.add_argument("--law", choices=sorted(LAWS), default="quality")
    p.add_argument("--n-col", default="N")
    p.add_argument("--d-col", default="D")
    p.add_argument("--loss-col", default="loss")
    p.add_argument("--q-col", default="q_proxy")
    p.add_argument("--bootstrap", type=int, default=0, help="bootstrap resamples for CIs")
    p.add_argument("--seed", type=int, default=0)


def _plan(ns: argparse.Namespace) -> int:
    params = json.loads(ns.params)
    if "params" in params:
        params = params["params"]
    opt = plan.compute_optimal(params, ns.compute, ns.quality)
    opt["compute_at_Q1_for_same_loss"] = plan.compute_equivalent(
        params, ns.compute, ns.quality, 1.0
    )
    opt["clean_tokens_worth_D_opt"] = plan.effective_data(params, opt["D"], ns.quality)
    print(json.dumps(opt, indent=2))
    return 0


def _configure_plan(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "params",
        help='JSON: {"A":..,"B":..,"E":..,"alpha":..,"beta":..,"gamma":..} or `fit` output',
    )
    p.add_argument("--compute", type=float, required=True, help="FLOPs, C = 6 N D")
    p.add_argument("--quality", type=float, default=1.0, help="Q of the data")


main = make_main(
    "quality-scaling",
    __version__,
    [
        reproduce_command(reproduce),
        Command(
            "fit", "fit the Chinchilla or quality-aware law to a CSV of runs", _fit, _configure_fit
        ),
        Command(
            "plan", "compute-optimal N, D at a quality Q for a fitted law", _plan, _configure_plan
        ),
    ],
    description="Quality-aware scaling law L(N, D, Q) (Subramanyam, Chen, Grossman; ICLR 2026).",
)


if __name__ == "__main__":
    raise SystemExit(main())
