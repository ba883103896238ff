"""The ``msgen`` console script: ``reproduce``, ``train``, ``generate`` and ``evaluate``.

Thin on purpose: torch, RDKit and the experiment are imported inside the command, so
``--help`` stays fast.
"""

from __future__ import annotations

import argparse

from msgen.costs import cost_help
from shared_core.cli import lazy_reproduce_command, make_main
from shared_core.verbs import evaluate_command, sample_command, train_command


def _train_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--group-by", choices=("name", "smiles"), default="name",
                   help="conformers of one molecule: same SDF title (default) or same "
                   "canonical SMILES")  # fmt: skip


def _generate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--smiles", action="append", default=[], metavar="SMILES",
                   help="a molecule (repeatable), instead of --data")  # fmt: skip
    p.add_argument("--num-confs", type=int, default=10, metavar="K",
                   help="conformers per molecule (default 10)")  # fmt: skip
    p.add_argument("--smiles-column", default=None, metavar="NAME",
                   help="the SMILES column of a CSV/TSV --data file (default: smiles)")  # fmt: skip


def _evaluate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--delta", type=float, default=0.5, metavar="ANGSTROM",
                   help="the COV threshold in Å (default 0.5, QM9's; GEOM-Drugs: 1.25)")  # fmt: skip


main = make_main(
    "msgen",
    [
        lazy_reproduce_command(
            "msgen.experiments.reproduce",
            help=(
                "Train MSGEN (heavy atoms -> upsampling -> guided all atoms) and the same GeoDiff "
                "diffusion model alone on real QM9 geometries; compare COV/MAT and bond quality "
                f"with RDKit ETKDG ({cost_help()})."
            ),
        ),
        train_command(
            "msgen.verbs:train",
            "train MSGEN (stage-1 heavy atoms, upsampling, stage-2 all atoms) on conformer "
            "ensembles in an SDF (all atoms with hydrogens); writes a checkpoint folder",
            config="msgen.verbs:TrainSettings",
            options=_train_options,
        ),
        sample_command(
            "msgen.verbs:generate",
            "generate --num-confs conformers per molecule (--data SMILES file or --smiles) "
            "into a multi-conformer SDF, all atoms with hydrogens",
            name="generate",
            options=_generate_options,
        ),
        evaluate_command(
            "msgen.verbs:evaluate",
            "COV-R/MAT-R and COV-P/MAT-P (GetBestRMS, heavy atoms) of generated conformers "
            "(first --data SDF) against reference ones (second --data SDF)",
            options=_evaluate_options,
        ),
    ],
    description="MSGEN (ICLR 2026): hierarchical multi-scale conformer generation.",
)

if __name__ == "__main__":
    raise SystemExit(main())
