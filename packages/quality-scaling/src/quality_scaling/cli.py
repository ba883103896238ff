"""The console script: ``quality-scaling reproduce | fit | plan``.

``fit --data runs.csv`` prints the fitted law (`summary.summary_text`), ``--out fit.json``
writes it for ``plan fit.json``, ``--plot fit.png`` draws fitted vs observed loss.

Thin on purpose: the experiments, numpy/scipy fits and torch are imported inside the run
functions, so ``--help`` answers at once.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from quality_scaling.costs import cost_help
from quality_scaling.experiments.scales import SCALES
from shared_core.cli import (
    Command,
    ReproduceArgs,
    UsageError,
    make_main,
    nonneg_int,
    reproduce_command,
)
from shared_core.verbs import Slots, VerbArgs, verb_command

LAW_NAMES = ("chinchilla", "quality", "quality_fixed_n")


def _reproduce(args: ReproduceArgs) -> int:
    from quality_scaling.experiments.headline import reproduce

    return reproduce(args)


def _fit(args: VerbArgs) -> int:
    from quality_scaling.fit import fit_law
    from quality_scaling.summary import fit_report, plot_fit, summary_text
    from quality_scaling.tables import read_runs_csv
    from shared_core.atomic import atomic_write_json

    x = args.extra
    try:
        data = read_runs_csv(
            args.data_path,
            n_col=x["n_col"],
            d_col=x["d_col"],
            loss_col=x["loss_col"],
            q_col=x["q_col"] if x["law"] != "chinchilla" else None,
            dropna=x["dropna"],
        )
        fit = fit_law(data, x["law"], delta=x["delta"], n_bootstrap=x["bootstrap"], seed=args.seed)
    except (ValueError, TypeError) as e:
        raise UsageError(str(e)) from e
    print(summary_text(fit, data))
    if args.out is not None:
        atomic_write_json(args.out, fit_report(fit, data))
        print(f"wrote {args.out}")
    if x["plot"] is not None:
        plot_fit(fit, data, x["plot"])
        print(f"wrote {x['plot']}")
    return 0


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def _fit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--law",
        choices=LAW_NAMES,
        default="quality",
        help="which law: quality_fixed_n is E + B/(D^beta Q^gamma) at one model size (the paper's fit)",
    )
    p.add_argument(
        "--delta",
        type=_positive_float,
        default=1e-3,
        help="Huber delta on log-loss residuals (1e-3: Huber, as Hoffmann et al.; 1: least squares)",
    )
    p.add_argument("--n-col", default="N", help="column of parameter counts N")
    p.add_argument("--d-col", default="D", help="column of training tokens D")
    p.add_argument("--loss-col", default="loss", help="column of final losses (nats)")
    p.add_argument("--q-col", default="q_proxy", help="column of data quality Q (quality laws)")
    p.add_argument(
        "--bootstrap", type=nonneg_int, default=0, help="bootstrap resamples for CIs (0: none)"
    )
    p.add_argument(
        "--dropna", action="store_true", help="drop rows with an empty or NaN cell (else an error)"
    )
    p.add_argument(
        "--plot", type=Path, default=None, metavar="PNG",
        help="write the diagnostic plot: fitted vs observed loss per quality level",
    )  # fmt: skip


def _plan(ns: argparse.Namespace) -> int:
    from quality_scaling import plan

    text = ns.params
    if text.endswith(".json"):
        path = Path(text)
        if not path.is_file():
            raise UsageError(f"params: no file {path} (expected JSON text or a `fit --out` file)")
        text = path.read_text()
    try:
        params = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"params: expected JSON, got {text!r:.80} ({e})") from None
    if isinstance(params, dict) and "params" in params:
        params = params["params"]
    if not isinstance(params, dict):
        raise UsageError(f"params: expected a JSON object of law parameters, got {params!r:.80}")
    try:
        opt = plan.compute_optimal(params, ns.compute, ns.quality)
        opt["compute_at_Q1_for_same_loss"] = plan.compute_equivalent(
            params, ns.compute, ns.quality, 1.0
        )
        opt["clean_tokens_worth_D_opt"] = plan.effective_data(params, opt["D"], ns.quality)
    except (ValueError, TypeError) as e:
        raise UsageError(str(e)) from e
    print(json.dumps(opt, indent=2))
    return 0


def _configure_plan(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "params",
        help='JSON: {"A":..,"B":..,"E":..,"alpha":..,"beta":..,"gamma":..}, or the file `fit --out` wrote',
    )
    p.add_argument("--compute", type=_positive_float, required=True, help="FLOPs, C = 6 N D")
    p.add_argument("--quality", type=_positive_float, default=1.0, help="Q of the data, in (0, 1]")


main = make_main(
    "quality-scaling",
    [
        reproduce_command(
            _reproduce,
            SCALES,
            help=(
                "train the paper's protocol (one model size, a fraction eta of the samples "
                "corrupted, Q = 1 - eta) and our noise-injection extensions as tiny GPTs (on "
                "--device, in --threads single-threaded workers), and fit the laws to them "
                f"(numpy, CPU); {cost_help()}."
            ),
        ),
        verb_command(
            "fit",
            _fit,
            "fit the Chinchilla or quality-aware law to a CSV of runs (--out: the fit as JSON)",
            Slots(data="required", checkpoint="none", out="optional"),
            options=_fit_options,
        ),
        Command(
            "plan", "compute-optimal N, D at a quality Q for a fitted law", _plan, _configure_plan
        ),
    ],
    description="Quality-aware scaling law L(N, D, Q) (Subramanyam, Chen, Grossman; ICLR 2026).",
)


if __name__ == "__main__":
    raise SystemExit(main())
