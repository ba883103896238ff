"""The ``explainable-mixtures`` console script: ``reproduce``, ``ablate-lambda``, and the verbs
on a user's table (``fit``, ``predict``, ``explain``; `explainable_mixtures.verbs`)."""

from __future__ import annotations

import argparse
from dataclasses import replace

from explainable_mixtures.costs import cost_help, lambda_cost_help
from shared_core.cli import lazy_reproduce_command, make_main, nonneg_int, positive_int
from shared_core.verbs import Slots, predict_command, verb_command


def _fit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", required=True, help="the target column (comma-separated: several)")
    p.add_argument(
        "--features", default="", help="feature columns, comma-separated (default: all others)"
    )
    p.add_argument(
        "--n-rules", type=positive_int, default=8, help="initial number of rules k (pruned by BIC)"
    )
    _table_options(p)
    p.add_argument(
        "--one-hot",
        action="store_true",
        help="encode a non-numeric feature column as one 0/1 column per value",
    )


def _table_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dropna",
        action="store_true",
        help="drop rows with an empty or NaN cell (else an error naming the row)",
    )


def _explain_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--row", type=nonneg_int, required=True, help="data row (0 = the first after the header)"
    )
    _table_options(p)


main = make_main(
    "explainable-mixtures",
    [
        lazy_reproduce_command(
            "explainable_mixtures.experiments.reproduce",
            help="Planted-rule recovery and test NLL of the EMM vs a GMM, a tree with Gaussian "
            f"leaves and an MDN on planted, QM9-gap and diabetes data; {cost_help()}.",
        ),
        replace(
            lazy_reproduce_command(
                "explainable_mixtures.experiments.lambda_ablation",
                help="The paper's ablation of the overlap weight lambda (0, 0.1, 0.3, 1): rules "
                "and test NLL of the paper's EMM on planted, QM9-gap and diabetes data; "
                f"{lambda_cost_help()}.",
            ),
            name="ablate-lambda",
        ),
        verb_command(
            "fit",
            "explainable_mixtures.verbs:fit",
            "fit an explainable mixture to a CSV: print the rules, write the model (joblib), "
            "rules.json and a plot per rule to --out",
            Slots(data="required", checkpoint="none", out="required"),
            config="explainable_mixtures.verbs:FitSettings",
            options=_fit_options,
        ),
        predict_command(
            "explainable_mixtures.verbs:predict",
            "predictive mean and std, rule weights and the assigned rule per row of a CSV",
            options=_table_options,
        ),
        verb_command(
            "explain",
            "explainable_mixtures.verbs:explain",
            "the rule that covers one row of a CSV, its weights and the row's density",
            Slots(data="required", checkpoint="required", out="none"),
            options=_explain_options,
        ),
    ],
    description="Explainable mixture models (ICLR 2026): mixtures with readable box rules.",
)

if __name__ == "__main__":
    raise SystemExit(main())
