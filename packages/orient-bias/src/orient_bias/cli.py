"""The ``orient-bias`` console script: ``audit``, ``augment`` and ``reproduce [--scale ...]``.

Thin on purpose: torch, scikit-learn and the experiments are imported inside the commands,
so ``orient-bias --help`` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from orient_bias.costs import audit_cost_help, cost_help
from shared_core.cli import (
    LazyScales,
    ReproduceArgs,
    make_main,
    reproduce_command,
)
from shared_core.verbs import Slots, verb_command

PACKAGE = "orient-bias"
REPRODUCE_EXTRAS = ("torch", "qm9", "chem")
REPRODUCE_MODULES = ("torch", "qm9pack", "rdkit")  # what shows each extra is installed


def _scales() -> dict[str, Any]:
    from orient_bias.experiments.reproduce import SCALES

    return SCALES


_SCALES = LazyScales(_scales)  # names for --help; the configs load on first use


def reproduce(args: ReproduceArgs) -> int:
    from shared_core.data import require_extra

    require_extra("orient-bias", REPRODUCE_EXTRAS, REPRODUCE_MODULES, "orient-bias reproduce")
    from orient_bias.experiments.reproduce import reproduce as run_findings
    from shared_core.device import resolve_device

    run_findings(
        args.config, scale=args.scale, seed=args.seed, device=str(resolve_device(args.device)),
        out=args.out,
    )  # fmt: skip
    return 0


def _audit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "path", nargs="?", type=Path,
        help="same as --data: XYZ/SDF/qm9pack CSV/.npz/.aselmdb/.db file, folder or archive",
    )  # fmt: skip
    p.add_argument(
        "--dataset", choices=["qm9"], help="audit a bundled dataset instead of PATH (qm9: qm9pack)"
    )
    p.add_argument("--max-molecules", type=int, help="subsample larger datasets (default 20000)")
    p.add_argument("--weighting", choices=["none", "mass"], help="PCA (default) or inertia frame")
    p.add_argument(
        "--mpnn-steps", type=int, default=1500,
        help="training steps of the paper's MPNN (batch 128; default 1500, whole epochs)",
    )  # fmt: skip
    p.add_argument(
        "--no-mpnn", action="store_true",
        help="skip the paper's MPNN (faster; no torch or RDKit needed)",
    )  # fmt: skip
    p.add_argument(
        "--fail-on-bias", action="store_true", help="exit with status 1 when poses are biased"
    )


main = make_main(
    PACKAGE,
    [
        reproduce_command(
            reproduce,
            _SCALES,
            help="Run the paper's three findings on QM9 (published vs rotated classifiers, "
            f"properties from orientation alone, Tanimoto neighbours share poses); {cost_help()}.",
        ),
        verb_command(
            "audit",
            "orient_bias.verbs:audit",
            "Test whether a dataset's poses are randomly oriented (the paper's finding 1 on your "
            "file): gradient-boosting and MPNN AUCs, KL of the frames to Haar, frame plots and "
            f"a one-line verdict in report.md (--out copies the report there); {audit_cost_help()}.",
            Slots(data="optional", checkpoint="none", out="optional"),
            config="orient_bias.audit:AuditConfig",
            options=_audit_options,
        ),
        verb_command(
            "augment",
            "orient_bias.verbs:augment",
            "Write every molecule (SDF record, XYZ frame) rotated about its centroid by its own "
            "uniformly random rotation (Haar on SO(3)); SDF or XYZ out.",
            Slots(data="required", checkpoint="none", out="required"),
        ),
    ],
    description="Orientation bias in molecular datasets (ICLR 2026).",
)
