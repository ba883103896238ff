"""The ``topoformer`` console script: ``reproduce [--scale ...]``, ``fit``, ``predict``, ``tokens``.

Thin on purpose: torch and the experiments are imported inside the command, so ``--help``
stays fast.
"""

from __future__ import annotations

import argparse

from shared_core.cli import lazy_reproduce_command, make_main
from shared_core.verbs import Slots, predict_command, verb_command
from topoformer.costs import cost_help


def _smiles_column(p: argparse.ArgumentParser) -> None:
    p.add_argument("--smiles-column", default="smiles", help="the CSV's SMILES column (smiles)")


def _fit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", help="the CSV column to predict (a TU folder: its graph labels)")
    p.add_argument(
        "--task", choices=["auto", "classification", "regression"], default="auto",
        help="auto: classification for a TU folder or <= 10 integer values, else regression",
    )  # fmt: skip
    _smiles_column(p)


main = make_main(
    "topoformer",
    [
        lazy_reproduce_command(
            "topoformer.experiments.reproduce",
            help=(
                "MUTAG 10-fold CV under the authors' protocol and an honest one (TopoFormer on "
                "Ricci + HKS vs GIN vs WL-SVM vs persistence images + MLP) and FreeSolv with a "
                f"scaffold split (TopoFormer on Ricci + atomic weight + ECFP vs GIN) "
                f"({cost_help()})."
            ),
        ),
        verb_command(
            "fit",
            "topoformer.verbs:fit",
            "Train TopoFormer on a CSV of SMILES + a target column (or a TU folder): k-fold "
            "cross-validation under the honest protocol (thresholds on the training fold, epoch "
            "chosen on validation), then the model saved to --out.",
            Slots(data="required", checkpoint="none", out="required"),
            config="topoformer.verbs:FitSettings",
            options=_fit_options,
        ),
        predict_command(
            "topoformer.verbs:predict",
            "Predict with a model `fit` saved: a CSV of SMILES (or a TU folder) -> a CSV of "
            "predictions (class probabilities for classification).",
            options=_smiles_column,
        ),
        verb_command(
            "tokens",
            "topoformer.verbs:tokens",
            "Export the Topo-Scan token sequences (N, T, 4) per filtration as .npz (thresholds "
            "from --checkpoint, or fitted on the file).",
            Slots(data="required", checkpoint="optional", out="required"),
            options=_smiles_column,
        ),
    ],
    description="TopoFormer (ICLR 2026): Topo-Scan token sequences read by a Transformer.",
)

if __name__ == "__main__":
    raise SystemExit(main())
